/**
 * The local stand-in for `supabase start` + `supabase functions serve`: every function at
 * /functions/v1/<name> (Supabase's URL shape, so supabase-js works unchanged) and the proxy at /api.
 */
import {
  createApiHandler,
  FUNCTION_NAME as API,
  serviceHandlers,
} from "../functions/api/handler.ts";
import type { ClientIpSource } from "../functions/_shared/config/app-config.ts";
import { FORWARDED_FOR } from "../functions/_shared/config/env-schema.ts";
import type { ServiceContext } from "../functions/_shared/context.ts";
import { ServiceError } from "../functions/_shared/http/errors.ts";
import { errorResponse } from "../functions/_shared/http/responses.ts";
import {
  type FunctionHandler,
  type Handler,
  invalidHost,
} from "../functions/_shared/http/router.ts";
import { corsPolicy, serve } from "../functions/_shared/http/serve.ts";
import { isStaticPath, serveStatic } from "./static.ts";

/**
 * The local server's public API key, the counterpart of the anon key `supabase start` prints: the
 * same on every machine and public by design (it grants nothing; it only tells the functions that
 * a supabase-js client has no session).
 */
export const LOCAL_ANON_KEY = "sb_publishable_wallet-vault-local-development";

export interface LocalApp {
  readonly handler: Handler;
  /** Each function as it would run deployed: its own CORS and error boundary. */
  readonly functions: Readonly<Record<string, Handler>>;
}

export function createLocalApp(context: ServiceContext): LocalApp {
  const cors = corsPolicy(context.config);
  const wrap = (handler: FunctionHandler) => serve(handler, cors, context.log);
  // One wrap per request, as deployed: /api wraps the proxy, not the functions behind it as well.
  const services = serviceHandlers(context);
  const functions: Record<string, Handler> = {};
  for (const [name, handler] of Object.entries(services)) functions[name] = wrap(handler);
  functions[API] = wrap(createApiHandler(services));

  const assets = wrap(serveStatic);
  const notFound = wrap(() => Promise.reject(new ServiceError("not_found", "No such route.")));
  const handler: Handler = (request) => {
    const { pathname } = new URL(request.url);
    const fn = /^\/functions\/v1\/([a-z-]+)(?:\/|$)/.exec(pathname)?.[1];
    if (fn !== undefined && Object.hasOwn(functions, fn)) return functions[fn](request);
    if (pathname === "/api" || pathname.startsWith("/api/")) return functions[API](request);
    // Where Supabase Auth publishes its keys, so supabase-js's getClaims works locally unchanged.
    const wellKnown = /^\/auth\/v1(\/\.well-known\/(?:jwks\.json|openid-configuration))$/.exec(
      pathname,
    );
    if (wellKnown !== null) {
      const url = new URL(request.url);
      url.pathname = `/functions/v1/wallet-proof${wellKnown[1]}`;
      return functions["wallet-proof"](
        new Request(url, { method: request.method, headers: request.headers }),
      );
    }
    if (isStaticPath(pathname)) return assets(request); // the settings page and browser client
    return notFound(request);
  };
  return { handler, functions };
}

/** A method token no route takes, standing in for those a Request cannot carry. */
const NO_ROUTE_METHOD = "NO-ROUTE";

/**
 * The app as the edge serves it: the client-address header the service reads (`clientIp`, the
 * CLIENT_IP_* settings) holds the socket's address, never what the client sent. This server
 * stands in for every trusted proxy: it overwrites the header with exactly `trustedHops` entries,
 * all the socket address (one with the defaults), so the configured hop count finds that address.
 * `x-forwarded-for` is overwritten the same way whichever header is configured. The request is
 * rebuilt from its parts rather than with `new Request(request, …)`, which would tie the copy to
 * `request.signal` (Deno warns about its legacy abort semantics), and its headers are copied once,
 * as name-value pairs (a Headers copy first costs more on every request).
 */
export function atEdge(
  handler: Handler,
  clientIp: ClientIpSource,
): Deno.ServeHandler<Deno.NetAddr> {
  return (request, info) => {
    const address = info.remoteAddr.hostname;
    // Header names come lower-cased from Headers (as does clientIp.header); a name sent twice
    // comes once, its values joined, so dropping it by name drops every copy.
    const headers: [string, string][] = [];
    for (const pair of request.headers) {
      if (pair[0] !== FORWARDED_FOR && pair[0] !== clientIp.header) headers.push(pair);
    }
    if (clientIp.header === FORWARDED_FOR) {
      headers.push([FORWARDED_FOR, Array(clientIp.trustedHops).fill(address).join(", ")]);
    } else {
      headers.push([FORWARDED_FOR, address], [clientIp.header, address]);
    }
    // Methods are case-sensitive on the wire, but Request upper-cases the standard ones ("get").
    const method = request.method.toUpperCase();
    // A GET or HEAD may arrive with a body on the wire; a Request cannot carry one, and no route reads it.
    const bodyless = method === "GET" || method === "HEAD";
    let edgeRequest: Request;
    try {
      edgeRequest = new Request(request.url, {
        method: request.method,
        headers,
        body: bodyless ? null : request.body,
      });
    } catch {
      // A Host that makes no URL ("Host: a b"; Deno.serve does not check it) is the client's fault.
      if (!URL.canParse(request.url)) return errorResponse(invalidHost());
      // Otherwise the Fetch API refused the method (TRACE, TRACK). Deployed, the function's router
      // sees it and answers 404, or 405 with the Allow header; a method no route takes stands in
      // so that it answers the same here.
      return handler(new Request(request.url, { method: NO_ROUTE_METHOD, headers }));
    }
    return handler(edgeRequest);
  };
}
