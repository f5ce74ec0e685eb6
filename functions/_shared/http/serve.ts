/** CORS and the error boundary every function (and the local server) answers through. */
import type { AppConfig } from "../config/app-config.ts";
import { acceptsLoopbackOrigins, isLoopbackOrigin } from "./local-origins.ts";
import type { Logger } from "./log.ts";
import { errorResponse, toServiceError } from "./responses.ts";
import type { FunctionHandler } from "./router.ts";

/** The reveal header x-service-server-secret is deliberately absent: a browser cannot send it. */
export const CORS_ALLOWED_HEADERS = "authorization, content-type, apikey, x-client-info";
const CORS_METHODS = "GET, POST, PUT, DELETE, OPTIONS";

export interface CorsPolicy {
  /** Exact origins allowed; an empty list allows any origin (bearer tokens, no cookies). */
  readonly allowedOrigins: readonly string[];
  /** Any loopback origin as well (local-origins.ts): development and test only. */
  readonly loopbackOrigins?: boolean;
}

/** The CORS policy configuration gives: ALLOWED_ORIGINS, plus loopback pages outside production. */
export function corsPolicy(config: Pick<AppConfig, "allowedOrigins" | "appEnv">): CorsPolicy {
  return {
    allowedOrigins: config.allowedOrigins,
    loopbackOrigins: acceptsLoopbackOrigins(config.appEnv),
  };
}

type HeaderPairs = readonly (readonly [string, string])[];
/** Retry-After is not a CORS-safelisted response header: without this, pages read it as null. */
const EXPOSED: readonly [string, string] = ["access-control-expose-headers", "retry-after"];
const VARY: readonly [string, string] = ["vary", "Origin"];
const ANY_ORIGIN: HeaderPairs = [["access-control-allow-origin", "*"], EXPOSED, VARY];
const NO_ORIGIN: HeaderPairs = [VARY];

/** The CORS headers for `request`, as name-value pairs: a Headers object per request cost more. */
function corsHeaders(request: Request, policy: CorsPolicy): HeaderPairs {
  if (policy.allowedOrigins.length === 0) return ANY_ORIGIN;
  const origin = request.headers.get("origin");
  if (
    origin !== null &&
    (policy.allowedOrigins.includes(origin) ||
      (policy.loopbackOrigins === true && isLoopbackOrigin(origin)))
  ) {
    return [["access-control-allow-origin", origin], EXPOSED, VARY];
  }
  return NO_ORIGIN;
}

/**
 * Wraps a handler with CORS and the error boundary: a ServiceError becomes its JSON error, a lost
 * database a 503, anything else a generic 500 whose details stay in the server log (by name and
 * code only, since driver messages can quote parameters).
 */
export function serve(handler: FunctionHandler, policy: CorsPolicy, log: Logger): FunctionHandler {
  return async (request, path) => {
    const cors = corsHeaders(request, policy);
    if (request.method === "OPTIONS") {
      const preflight = new Headers(cors as [string, string][]);
      preflight.set("access-control-allow-methods", CORS_METHODS);
      preflight.set("access-control-allow-headers", CORS_ALLOWED_HEADERS);
      preflight.set("access-control-max-age", "600");
      // Like every answer (the preflight cache is Access-Control-Max-Age's, not HTTP's).
      preflight.set("cache-control", "no-store");
      return new Response(null, { status: 204, headers: preflight });
    }
    let response: Response;
    try {
      response = await handler(request, path);
    } catch (error) {
      response = errorResponse(toServiceError(error, log));
    }
    for (const [name, value] of cors) response.headers.set(name, value);
    return response;
  };
}
