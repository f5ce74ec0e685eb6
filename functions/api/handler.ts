/**
 * The thin /api proxy: maps the spec's /api paths onto the functions, enforces the body limit and
 * passes everything else through. It holds no business logic; the functions answer.
 */
import type { ServiceContext } from "../_shared/context.ts";
import { ServiceError } from "../_shared/errors.ts";
import {
  type Handler,
  MAX_BODY_BYTES,
  MAX_PROOF_BODY_BYTES,
  readBody,
  subpath,
} from "../_shared/http.ts";

export const FUNCTION_NAME = "api";

/** /api path (below /api) → [function, path below the function]. */
export const API_ROUTES: Readonly<Record<string, readonly [string, string]>> = {
  "/auth/nonce": ["wallet-proof", "/nonce"],
  "/auth/wallet-proof": ["wallet-proof", ""],
  "/auth/refresh": ["wallet-proof", "/refresh"],
  "/auth/logout": ["wallet-proof", "/logout"],
  "/secrets": ["user-secrets", ""],
  "/secrets/reveal": ["user-secrets", "/reveal"],
};

/** Calls a function with a request already addressed to it. */
export type FunctionInvoker = (functionName: string, request: Request) => Promise<Response>;

// Hop-by-hop headers (RFC 9110 §7.6.1) belong to one connection and are never forwarded.
const HOP_BY_HOP = [
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
  "content-length",
];

function withoutHopByHop(headers: Headers): Headers {
  const copy = new Headers(headers);
  for (const name of copy.get("connection")?.split(",") ?? []) copy.delete(name.trim());
  for (const name of HOP_BY_HOP) copy.delete(name);
  return copy;
}

export function createApiHandler(invoke: FunctionInvoker): Handler {
  return async (request) => {
    const path = subpath(request.url, FUNCTION_NAME)?.replace(/\/+$/, "") ?? null;
    const target = path === null ? undefined : API_ROUTES[path];
    if (target === undefined) throw new ServiceError("not_found", "No such route.");
    const [functionName, functionPath] = target;
    // Case-insensitive: `new Request` below normalises "get" to GET, which must carry no body.
    const bodiless = ["GET", "HEAD"].includes(request.method.toUpperCase());
    const limit = path === "/auth/wallet-proof" ? MAX_PROOF_BODY_BYTES : MAX_BODY_BYTES;
    const body = bodiless ? null : await readBody(request, limit);
    const url = new URL(request.url);
    const forwarded = new Request(
      `http://functions.internal/functions/v1/${functionName}${functionPath}${url.search}`,
      { method: request.method, headers: withoutHopByHop(request.headers), body },
    );
    return await invoke(functionName, forwarded);
  };
}

/** Local server: dispatches in-process to the mounted handlers. */
export function inProcessInvoker(handlers: Readonly<Record<string, Handler>>): FunctionInvoker {
  return (functionName, request) => {
    const handler = handlers[functionName];
    if (!handler) throw new ServiceError("not_found", "No such route.");
    return handler(request);
  };
}

/** Deployed: reaches the functions by their URLs (`${SUPABASE_URL}/functions/v1/<name>`). */
export function fetchInvoker(
  functionsUrl: string,
  options: { anonKey?: string | null; timeoutMs?: number } = {},
): FunctionInvoker {
  return async (functionName, request) => {
    const url = new URL(request.url);
    const target = `${functionsUrl}${url.pathname.slice("/functions/v1".length)}${url.search}`;
    const forwardHeaders = new Headers(request.headers);
    // Supabase's gateway wants the project's anon key in `apikey`; the bearer token is the creator's.
    if (options.anonKey && !forwardHeaders.has("apikey")) {
      forwardHeaders.set("apikey", options.anonKey);
    }
    let upstream: Response;
    try {
      upstream = await fetch(target, {
        method: request.method,
        headers: forwardHeaders,
        body: request.body === null ? null : await request.arrayBuffer(),
        redirect: "manual",
        signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
      });
    } catch {
      throw new ServiceError(
        "upstream_unavailable",
        `The ${functionName} function could not be reached.`,
      );
    }
    const headers = withoutHopByHop(upstream.headers);
    headers.delete("content-encoding"); // fetch has already decoded the body
    return new Response(upstream.body, { status: upstream.status, headers });
  };
}

/** Deployed entry: the proxy forwards over HTTP to the function URLs. */
export function createDeployedApiHandler(context: ServiceContext): Handler {
  const { functionsUrl, supabase } = context.config;
  if (functionsUrl === null) {
    return () => {
      throw new ServiceError("not_configured", "The service is not configured.");
    };
  }
  return createApiHandler(fetchInvoker(functionsUrl, { anonKey: supabase.anonKey }));
}
