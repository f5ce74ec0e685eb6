/**
 * The one HTTP layer every function shares: JSON responses and errors, bounded JSON bodies,
 * routing with 404/405, CORS, and the mapping of every failure to a safe JSON error.
 */
import { isDatabaseUnavailable, ServiceError } from "./errors.ts";
import type { Logger } from "./log.ts";

export type Handler = (request: Request) => Promise<Response>;

export const MAX_BODY_BYTES = 16 * 1024;
/** The wallet proof's body: a contract wallet's signature alone may be 16 KB (32 KB of hex). */
export const MAX_PROOF_BODY_BYTES = 48 * 1024;

const JSON_HEADERS = {
  "content-type": "application/json; charset=utf-8",
  "cache-control": "no-store",
};

export function json(body: unknown, status = 200, headers?: HeadersInit): Response {
  const response = new Response(JSON.stringify(body), { status, headers: JSON_HEADERS });
  // Most answers add nothing: no Headers object is built for them (measured ~10 µs a response).
  if (headers !== undefined) {
    for (const [name, value] of new Headers(headers)) response.headers.set(name, value);
  }
  return response;
}

export function errorResponse(error: ServiceError): Response {
  return json(
    { error: { code: error.code, message: error.message, ...error.details } },
    error.status,
    error.headers,
  );
}

/**
 * Reads a body of at most `maxBytes`, counting bytes as they arrive so an oversized or endless
 * body is cut off without being buffered.
 */
export async function readBody(
  request: Request,
  maxBytes = MAX_BODY_BYTES,
): Promise<Uint8Array<ArrayBuffer>> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > maxBytes) throw tooLarge(maxBytes);
  if (request.body === null) return new Uint8Array(0);

  const chunks: Uint8Array<ArrayBuffer>[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    let chunk: ReadableStreamReadResult<Uint8Array<ArrayBuffer>>;
    try {
      chunk = await reader.read();
    } catch {
      // The client went away mid-body, or its framing was broken: its fault, not ours (no 500).
      throw new ServiceError("invalid_request", "The request body could not be read in full.");
    }
    const { done, value } = chunk;
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge(maxBytes);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0];
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/** Reads a bounded JSON body. Returns undefined for an empty body (the caller decides if that is ok). */
export async function readJson(request: Request, maxBytes = MAX_BODY_BYTES): Promise<unknown> {
  const bytes = await readBody(request, maxBytes);
  if (bytes.byteLength === 0) return undefined;
  const mediaType = request.headers.get("content-type")?.split(";")[0].trim().toLowerCase();
  if (mediaType !== "application/json") {
    throw new ServiceError(
      "unsupported_media_type",
      "Send the body as Content-Type: application/json.",
    );
  }
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw new ServiceError("invalid_json", "The body is not valid UTF-8 JSON.");
  }
}

function tooLarge(maxBytes: number) {
  return new ServiceError("payload_too_large", `The body must be at most ${maxBytes} bytes.`, {
    maxBytes,
  });
}

export function bearerToken(request: Request): string | null {
  const header = request.headers.get("authorization");
  if (header === null) return null;
  const match = /^Bearer[ ]+([^\s]+)[ ]*$/i.exec(header);
  if (!match) {
    throw new ServiceError("invalid_token", "Send the session as Authorization: Bearer <token>.");
  }
  return match[1];
}

/**
 * The caller's session token, or null when it has none. supabase-js sends the project's public API
 * key as the bearer when the app has no session of its own: that is a client without a session, not
 * a forged one. Only an exact match counts (a bearer that merely looks like a key is a token that
 * fails verification); the keys ship in every frontend, so comparing them leaks nothing.
 */
export function sessionBearer(request: Request, publicApiKeys: readonly string[]): string | null {
  const token = bearerToken(request);
  return token !== null && publicApiKeys.includes(token) ? null : token;
}

// ---------------------------------------------------------------------------------------------
// Routing

export interface Route {
  readonly method: "GET" | "POST" | "PUT" | "DELETE";
  /** The path below the function's own name, e.g. "" or "/reveal". */
  readonly path: string;
  readonly handle: Handler;
}

/**
 * The part of the path below the function's name. Supabase hands a function `/<name>/...`; the
 * local server and direct calls may keep the `/functions/v1` prefix; both are accepted.
 */
export function subpath(url: string, functionName: string): string | null {
  const { pathname } = new URL(url);
  const prefix = pathname.startsWith("/functions/v1/") ? "/functions/v1/" : "/";
  const rest = pathname.slice(prefix.length);
  if (rest !== functionName && !rest.startsWith(`${functionName}/`)) return null;
  return rest.slice(functionName.length).replace(/\/+$/, "");
}

export function router(functionName: string, routes: readonly Route[]): Handler {
  return (request) => {
    const path = subpath(request.url, functionName);
    const candidates = routes.filter((route) => route.path === path);
    if (path === null || candidates.length === 0) {
      throw new ServiceError("not_found", "No such route.");
    }
    const route = candidates.find((r) => r.method === request.method);
    if (!route) {
      const allow = candidates.map((r) => r.method).join(", ");
      throw new ServiceError("method_not_allowed", `Use ${allow}.`, undefined, { allow });
    }
    return route.handle(request);
  };
}

// ---------------------------------------------------------------------------------------------
// CORS and error boundary

/** The reveal header x-service-server-secret is deliberately absent: a browser cannot send it. */
export const CORS_ALLOWED_HEADERS = "authorization, content-type, apikey, x-client-info";
const CORS_METHODS = "GET, POST, PUT, DELETE, OPTIONS";

export interface CorsPolicy {
  /** Exact origins allowed; an empty list allows any origin (bearer tokens, no cookies). */
  readonly allowedOrigins: readonly string[];
}

type HeaderPairs = readonly (readonly [string, string])[];
const ANY_ORIGIN: HeaderPairs = [["access-control-allow-origin", "*"], ["vary", "Origin"]];
const NO_ORIGIN: HeaderPairs = [["vary", "Origin"]];

/** The CORS headers for `request`, as name-value pairs: a Headers object per request cost more. */
function corsHeaders(request: Request, policy: CorsPolicy): HeaderPairs {
  if (policy.allowedOrigins.length === 0) return ANY_ORIGIN;
  const origin = request.headers.get("origin");
  if (origin !== null && policy.allowedOrigins.includes(origin)) {
    return [["access-control-allow-origin", origin], ["vary", "Origin"]];
  }
  return NO_ORIGIN;
}

/**
 * Wraps a handler with CORS and the error boundary: a ServiceError becomes its JSON error, a lost
 * database a 503, anything else a generic 500 whose details stay in the server log (by name and
 * code only, since driver messages can quote parameters).
 */
export function serve(handler: Handler, policy: CorsPolicy, log: Logger): Handler {
  return async (request) => {
    const cors = corsHeaders(request, policy);
    if (request.method === "OPTIONS") {
      const preflight = new Headers(cors as [string, string][]);
      preflight.set("access-control-allow-methods", CORS_METHODS);
      preflight.set("access-control-allow-headers", CORS_ALLOWED_HEADERS);
      preflight.set("access-control-max-age", "600");
      return new Response(null, { status: 204, headers: preflight });
    }
    let response: Response;
    try {
      response = await handler(request);
    } catch (error) {
      response = errorResponse(toServiceError(error, log));
    }
    for (const [name, value] of cors) response.headers.set(name, value);
    return response;
  };
}

export function toServiceError(error: unknown, log: Logger): ServiceError {
  if (error instanceof ServiceError) return error;
  if (isDatabaseUnavailable(error)) {
    log.error("database_unavailable", { code: errorCode(error) });
    return new ServiceError(
      "database_unavailable",
      "The database is unavailable; retry shortly.",
      undefined,
      {
        "retry-after": "1",
      },
    );
  }
  log.error("internal_error", { name: errorName(error), code: errorCode(error) });
  return new ServiceError("internal_error", "Something went wrong on our side.");
}

function errorName(error: unknown): string | null {
  return error instanceof Error ? error.name : null;
}

function errorCode(error: unknown): string | null {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : null;
}
