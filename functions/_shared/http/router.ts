/** Routing below a function's name, with 404 and 405 (and its Allow header). */
import { ServiceError } from "./errors.ts";

export type Handler = (request: Request) => Promise<Response>;

/**
 * A function's handler. `path`, when given, is the path below the function's name, already routed
 * by the /api proxy, which hands the request over as it came rather than rebuilt for a new URL.
 */
export type FunctionHandler = (request: Request, path?: string) => Promise<Response>;

/**
 * A route and how it is answered: by `handle`, or by the handler `load` makes on the route's first
 * request, so that a cold start loads the routes it is asked for before it answers, not every route.
 * `load` imports with a literal specifier, so the module is in the deploy's bundle (the Supabase
 * CLI and `deno info` follow it).
 */
export type Route =
  & {
    readonly method: "GET" | "POST" | "PUT" | "DELETE";
    /** The path below the function's own name, e.g. "" or "/reveal". */
    readonly path: string;
  }
  & ({ readonly handle: Handler } | { readonly load: () => Promise<Handler> });

/**
 * The part of the path below the function's name. Supabase hands a function `/<name>/...`; the
 * local server and direct calls may keep the `/functions/v1` prefix; both are accepted.
 */
export function subpath(url: string, functionName: string): string | null {
  // Deno.serve builds the URL from the Host header without checking it ("Host: a b").
  const parsed = URL.parse(url);
  if (parsed === null) throw invalidHost();
  const { pathname } = parsed;
  const prefix = pathname.startsWith("/functions/v1/") ? "/functions/v1/" : "/";
  const rest = pathname.slice(prefix.length);
  if (rest !== functionName && !rest.startsWith(`${functionName}/`)) return null;
  return withoutTrailingSlashes(rest.slice(functionName.length));
}

/**
 * `path` without its trailing slashes, in one pass from the end. `/\/+$/` backtracks at every
 * slash of a long run that is not at the end ("/api////…/a"): a long path would hold the event
 * loop, before any limit or token check.
 */
function withoutTrailingSlashes(path: string): string {
  let end = path.length;
  while (end > 0 && path.charCodeAt(end - 1) === SLASH) end--;
  return path.slice(0, end);
}

const SLASH = 0x2f;

/** The handler `make` builds, made by the first request; `load` makes it ahead of one. */
function onDemand(make: () => Promise<Handler>): { handle: Handler; load: () => Promise<Handler> } {
  let made: Handler | undefined;
  const load = madeOnce(async () => made = await make());
  const handle = (request: Request) =>
    made ? made(request) : load().then((handler) => handler(request));
  return { handle, load };
}

/**
 * What `make` resolves to, made by the first call and shared by every later one: a dependency
 * that several routes made on demand share. After a failure, the next call tries again.
 */
export function madeOnce<T>(make: () => Promise<T>): () => Promise<T> {
  let making: Promise<T> | undefined;
  return () =>
    making ??= make().catch((error) => {
      making = undefined;
      throw error;
    });
}

/**
 * Routes requests below `functionName` to `declared`. Once the first request is answered, the routes
 * with a `load` that it did not need are loaded in the background, ahead of their first request.
 */
export function router(functionName: string, declared: readonly Route[]): FunctionHandler {
  const loads: (() => Promise<Handler>)[] = [];
  const routes = declared.map(({ method, path, ...answer }) => {
    if ("handle" in answer) return { method, path, handle: answer.handle };
    const { handle, load } = onDemand(answer.load);
    loads.push(load);
    return { method, path, handle };
  });
  let answeredOnce = false;
  const loadTheRest = () => {
    // A module that fails to load fails its route's request instead, which tries again.
    for (const load of loads) load().catch(() => {});
  };
  return (request, routed) => {
    // Only a string is a routed path: Deno.serve, handed this directly, passes its connection info.
    const path = typeof routed === "string" ? routed : subpath(request.url, functionName);
    const candidates = routes.filter((route) => route.path === path);
    if (path === null || candidates.length === 0) {
      throw new ServiceError("not_found", "No such route.");
    }
    // HEAD is answered wherever GET is (RFC 9110 §9.3.2); the server sends no body for it.
    const method = request.method === "HEAD" ? "GET" : request.method;
    const route = candidates.find((r) => r.method === method);
    if (!route) {
      const methods = candidates.map((r) => r.method);
      const allow = methods.flatMap((m) => m === "GET" ? [m, "HEAD"] : [m]).join(", ");
      throw new ServiceError("method_not_allowed", `Use ${allow}.`, undefined, { allow });
    }
    const answer = route.handle(request);
    if (!answeredOnce) {
      answeredOnce = true;
      const later = () => setTimeout(loadTheRest, 0);
      answer.then(later, later);
    }
    return answer;
  };
}

/** A request whose Host header makes no URL: the client's fault, answered 400. */
export function invalidHost(): ServiceError {
  return new ServiceError("invalid_request", "The Host header is not a valid host.");
}
