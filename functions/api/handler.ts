/**
 * The thin /api proxy: maps the public /api paths onto the wallet-proof and user-secrets handlers
 * and calls them in its own process. Deployed, that is one invocation per request: no second trip
 * through Supabase's gateway, no second cold start. It holds no business logic; the functions answer.
 */
import type { ServiceContext } from "../_shared/context.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import { MAX_BODY_BYTES, MAX_PROOF_BODY_BYTES, readBody } from "../_shared/http/bodies.ts";
import { type Handler, subpath } from "../_shared/http/router.ts";
import {
  createUserSecretsHandler,
  FUNCTION_NAME as USER_SECRETS,
} from "../user-secrets/handler.ts";
import {
  createWalletProofHandler,
  FUNCTION_NAME as WALLET_PROOF,
} from "../wallet-proof/handler.ts";

export const FUNCTION_NAME = "api";

/**
 * Every deployed function's name (its folder under functions/), the proxy last: the one list the
 * local server, the edge-shaped test harness and the bench use. supabase/config.toml, which cannot
 * import, names them again.
 */
export const FUNCTION_NAMES = [WALLET_PROOF, USER_SECRETS, FUNCTION_NAME] as const;

/** The functions behind /api, built from one context, each passed through `wrap`. */
export function serviceHandlers(
  context: ServiceContext,
  wrap: (handler: Handler) => Handler = (handler) => handler,
): Record<string, Handler> {
  return {
    [WALLET_PROOF]: wrap(createWalletProofHandler(context)),
    [USER_SECRETS]: wrap(createUserSecretsHandler(context)),
  };
}

/** /api path (below /api) → [function, path below the function]. */
export const API_ROUTES: Readonly<Record<string, readonly [string, string]>> = {
  "/auth/nonce": [WALLET_PROOF, "/nonce"],
  "/auth/wallet-proof": [WALLET_PROOF, ""],
  "/auth/refresh": [WALLET_PROOF, "/refresh"],
  "/auth/logout": [WALLET_PROOF, "/logout"],
  "/secrets": [USER_SECRETS, ""],
  "/secrets/reveal": [USER_SECRETS, "/reveal"],
};

/** Handlers by function name, each taking requests addressed to `/functions/v1/<name>/…`. */
export type FunctionHandlers = Readonly<Record<string, Handler>>;

export function createApiHandler(functions: FunctionHandlers): Handler {
  return async (request) => {
    const path = subpath(request.url, FUNCTION_NAME)?.replace(/\/+$/, "") ?? null;
    const target = path === null ? undefined : API_ROUTES[path];
    if (target === undefined) throw new ServiceError("not_found", "No such route.");
    const [functionName, functionPath] = target;
    const handler = functions[functionName];
    if (handler === undefined) throw new ServiceError("not_found", "No such route.");
    // Case-insensitive: `new Request` below normalises "get" to GET, which must carry no body.
    const bodiless = ["GET", "HEAD"].includes(request.method.toUpperCase());
    const limit = path === "/auth/wallet-proof" ? MAX_PROOF_BODY_BYTES : MAX_BODY_BYTES;
    const body = bodiless ? null : await readBody(request, limit);
    // Every header is kept as the edge delivered it: this is a call within one process, not a
    // hop, so nothing a client names in `Connection` can strip a header the service set (such as
    // x-forwarded-for). Only the framing headers go, since the body is handed over whole.
    const headers = new Headers(request.headers);
    headers.delete("content-length");
    headers.delete("transfer-encoding");
    const url = new URL(request.url);
    return await handler(
      new Request(
        `${url.origin}/functions/v1/${functionName}${functionPath}${url.search}`,
        { method: request.method, headers, body },
      ),
    );
  };
}

/** Deployed entry: both functions' handlers in this process, built from the same context. */
export function createDeployedApiHandler(context: ServiceContext): Handler {
  return createApiHandler(serviceHandlers(context));
}
