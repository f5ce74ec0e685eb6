/**
 * Loopback origins: pages served from the developer's own machine (a Vite or Next dev server on
 * any port). Outside production, CORS lets them in and sign-in names the page's own origin in the
 * EIP-4361 message, with no ALLOWED_ORIGINS to keep in step with each dev server's port.
 * Production never does: it keeps its explicit https list. This is safe only because development
 * and test run against a local stack alone (config/local-stack.ts): no hosted project's creators
 * can be signed in through it.
 */
import type { AppEnv } from "../config/app-config.ts";
import { isLoopbackHostname } from "../../../protocol/loopback.ts";

/** Whether `appEnv` lets any loopback origin in (development and test; never production). */
export function acceptsLoopbackOrigins(appEnv: AppEnv): boolean {
  return appEnv !== "production";
}

/** An http(s) origin, as a browser sends it, whose host is loopback (protocol/loopback.ts). */
export function isLoopbackOrigin(origin: string | null): origin is string {
  if (origin === null) return false;
  const url = URL.parse(origin);
  // Only the serialised origin itself: no path, credentials, default port or upper case.
  if (url === null || url.origin !== origin) return false;
  if (url.protocol !== "http:" && url.protocol !== "https:") return false;
  return isLoopbackHostname(url.hostname);
}

/**
 * The origins a sign-in request may name: the configured ones, plus, where loopback origins are
 * accepted, the request's own `Origin` when it is one. The page's origin, not any loopback one: a
 * message made for one loopback page is refused when another page (or no page) presents it.
 */
export function signInOriginsFor(
  configured: readonly string[],
  request: Request,
  acceptLoopback: boolean,
): readonly string[] {
  if (!acceptLoopback) return configured;
  const origin = request.headers.get("origin");
  if (!isLoopbackOrigin(origin) || configured.includes(origin)) return configured;
  return [...configured, origin];
}
