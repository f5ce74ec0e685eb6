/**
 * The thin /api proxy: maps the public /api paths onto the wallet-proof and user-secrets handlers
 * and calls them in its own process. Deployed, that is one invocation per request: no second trip
 * through Supabase's gateway, no second cold start. It holds no business logic; the functions answer.
 * The request is handed over as the edge delivered it (method, URL, every header, the unread body),
 * with the path below the function's name beside it: nothing is copied, and each route reads its
 * own body within its own limit.
 */
import type { ServiceContext } from "../_shared/context.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import { json } from "../_shared/http/responses.ts";
import { type FunctionHandler, type Handler, router, subpath } from "../_shared/http/router.ts";
import {
  createUserSecretsHandler,
  FUNCTION_NAME as USER_SECRETS,
} from "../user-secrets/handler.ts";
import {
  createWalletProofHandler,
  FUNCTION_NAME as WALLET_PROOF,
} from "../wallet-proof/handler.ts";
import { OPENAPI_PATH } from "./openapi-path.ts";

export const FUNCTION_NAME = "api";

/**
 * The functions behind /api, built from one context, unwrapped: whatever serves them adds CORS and
 * the error boundary once, around the proxy or around each function.
 */
export function serviceHandlers(context: ServiceContext): Record<string, FunctionHandler> {
  return {
    [WALLET_PROOF]: createWalletProofHandler(context),
    [USER_SECRETS]: createUserSecretsHandler(context),
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
  // The creator's controls (docs/api.md#creator-controls).
  "/auth/confirm/nonce": [WALLET_PROOF, "/confirm/nonce"],
  "/auth/sessions": [WALLET_PROOF, "/sessions"],
  "/auth/sessions/sign-out": [WALLET_PROOF, "/sessions/sign-out"],
  "/secrets/activity": [USER_SECRETS, "/activity"],
  // Locking needs the session alone, beside the vault it locks; unlocking needs a fresh wallet
  // signature, which only wallet-proof checks (it alone holds the chains' RPCs). So a stolen
  // session can lock, never unlock, and the vault's function never verifies a signature.
  "/secrets/lock": [USER_SECRETS, "/lock"],
  "/secrets/unlock": [WALLET_PROOF, "/unlock"],
  "/account": [WALLET_PROOF, "/account"],
  "/account/export": [USER_SECRETS, "/export"],
};

/** Handlers by function name; the proxy hands each the path below its name beside the request. */
export type FunctionHandlers = Readonly<Record<string, FunctionHandler>>;

/**
 * GET /api/openapi.json: the description of API_ROUTES (openapi.ts), built on first request (it
 * depends on code alone). Any origin may read it: it is public, and tools (an API catalogue, a
 * docs page) load it from theirs.
 */
function describedRoute(): FunctionHandler {
  return router(FUNCTION_NAME, [{
    method: "GET",
    path: OPENAPI_PATH,
    load: async () => {
      const document = (await import("./openapi.ts")).openApiDocument(API_ROUTES);
      return () => Promise.resolve(json(document, 200, { "access-control-allow-origin": "*" }));
    },
  }]);
}

export function createApiHandler(functions: FunctionHandlers): Handler {
  const description = describedRoute();
  // deno-lint-ignore require-await
  return async (request) => {
    const path = subpath(request.url, FUNCTION_NAME);
    if (path === OPENAPI_PATH) return description(request, path);
    const target = path === null ? undefined : API_ROUTES[path];
    if (target === undefined) throw new ServiceError("not_found", "No such route.");
    const [functionName, functionPath] = target;
    const handler = functions[functionName];
    if (handler === undefined) throw new ServiceError("not_found", "No such route.");
    // A call within one process, not a hop: nothing a client names in `Connection` can strip a
    // header the edge set (such as x-forwarded-for), since no header is touched at all.
    return handler(request, functionPath);
  };
}

/** Deployed entry: both functions' handlers in this process, built from the same context. */
export function createDeployedApiHandler(context: ServiceContext): Handler {
  return createApiHandler(serviceHandlers(context));
}
