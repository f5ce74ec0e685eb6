/**
 * One JSON request to the service, as both clients (browser and live-run server) make it. It never
 * follows a redirect: fetch would send the body (a key being saved, a refresh token) and every
 * header but Authorization (the apikey, the reveal token) again to whatever origin the Location
 * names. It gives up after a deadline that covers reading the answer too, and no error quotes the
 * answer's text, which may hold a revealed value. Erasable TypeScript only (served to browsers as
 * is).
 */
import { serviceError, VaultError } from "./errors.ts";

/** Per attempt, including reading the body. */
export const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * The longest the browser client waits for one answer. A refresh is tried twice at most, and both
 * tries must fit the service's retry grace: two of these (RETRY_GRACE_SECONDS in refresh.ts).
 */
const MAX_BROWSER_TIMEOUT_MS = 60_000;

/**
 * The parsed JSON of a 2xx answer (undefined for a 204), else a VaultError: the service's own
 * error, `timeout`, `network_error`, `redirect_refused` or `invalid_response`.
 */
export async function requestJson(
  fetchFn: typeof fetch,
  url: string,
  init: RequestInit,
  timeoutMs: number,
): Promise<unknown> {
  const signal = AbortSignal.timeout(timeoutMs);
  const failure = (error: unknown) =>
    signal.aborted
      ? new VaultError("timeout", `The vault at ${url} did not answer within ${timeoutMs} ms.`)
      // The cause is the runtime's own error: it names the URL and the failure, never headers.
      : new VaultError("network_error", `The vault at ${url} could not be reached.`, {
        cause: error,
      });
  try {
    // Only a check: the caller's fetch (an option of both clients) gets the headers as given.
    new Headers(init.headers);
  } catch {
    // The runtime's message quotes the bad value, which is a token: no cause, and no retry.
    throw new VaultError(
      "invalid_token",
      "A token for this request holds characters a header cannot carry (a space or line break?).",
    );
  }
  let response: Response;
  // Raced with the deadline as well as given it: a caller's fetch that rebuilds `init` drops the
  // signal, and a call must still give up (a refresh holds the cross-tab lock until it does).
  // (async: a fetch that throws rather than rejecting is a network_error too)
  const answer = (async () => await fetchFn(url, { ...init, redirect: "manual", signal }))();
  try {
    response = await beforeDeadline(answer, signal);
  } catch (error) {
    // An answer that comes after the deadline is not read: its body is let go.
    if (signal.aborted) answer.then((late) => late.body?.cancel(), () => {}).catch(() => {});
    throw failure(error);
  }
  if (response.type === "opaqueredirect" || (response.status >= 300 && response.status < 400)) {
    await response.body?.cancel().catch(() => {});
    throw redirectRefused(url, response);
  }
  if (response.status === 204) return undefined;
  let text: string;
  try {
    text = await beforeDeadline(response.text(), signal);
  } catch (error) {
    if (signal.aborted) throw failure(error);
    throw new VaultError(
      "invalid_response",
      `The vault at ${url} answered ${response.status}, but its body could not be read in full.`,
      { status: response.status, cause: error },
    );
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the text around the fault, which may be a revealed value.
    body = undefined;
  }
  if (response.ok && body !== undefined) return body;
  const error = response.ok ? null : serviceError(response.status, body, response.headers);
  if (error !== null) throw error;
  throw new VaultError(
    "invalid_response",
    `The vault at ${url} answered ${response.status} without the service's JSON body.`,
    { status: response.status },
  );
}

/** `work`, or the signal's reason as soon as it aborts, whichever comes first. */
function beforeDeadline<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    work.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

function redirectRefused(url: string, response: Response): VaultError {
  // An opaque redirect (browsers) hides its status and Location; Deno shows both.
  const location = response.headers.get("location");
  const status = response.type === "opaqueredirect" ? null : response.status;
  return new VaultError(
    "redirect_refused",
    `The vault at ${url} answered ${status ?? "a redirect"} to ${
      location ?? "an undisclosed location"
    }; redirects are not followed. Point baseUrl at the final address.`,
    { status, details: location === null ? {} : { location } },
  );
}

export interface ServiceCallOptions {
  /** The API root without a trailing slash. */
  readonly baseUrl: string;
  // `| undefined`: the browser client passes its own options through (exactOptionalPropertyTypes).
  readonly fetch?: typeof fetch | undefined;
  /** A Supabase anon or publishable key, sent as `apikey`. */
  readonly apiKey?: string | undefined;
  /** Per call, including reading the answer (default DEFAULT_TIMEOUT_MS). */
  readonly timeoutMs?: number | undefined;
}

export type ServiceCall = <T>(
  method: "GET" | "POST" | "PUT" | "DELETE",
  path: string,
  init?: { body?: unknown; accessToken?: string },
) => Promise<T>;

/** The browser client's calls: no cookies, no cache, and requestJson's rules. */
export function createServiceCall(options: ServiceCallOptions): ServiceCall {
  const timeoutMs = checkedTimeout(options.timeoutMs, "createVaultClient", MAX_BROWSER_TIMEOUT_MS);
  // A key a header cannot carry is a configuration mistake, said once here: at call time it would
  // read as a bad session token and sign the creator out.
  if (options.apiKey !== undefined && !HEADER_SAFE_VALUE.test(options.apiKey)) {
    throw new TypeError(
      "createVaultClient: apiKey must be printable ASCII without spaces or line breaks.",
    );
  }
  // Looked up per call, so a fetch installed after the client was made is still used.
  const fetchFn: typeof fetch = options.fetch ?? ((input, init) => fetch(input, init));
  return async function call<T>(
    method: "GET" | "POST" | "PUT" | "DELETE",
    path: string,
    init: { body?: unknown; accessToken?: string } = {},
  ): Promise<T> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (init.body !== undefined) headers["content-type"] = "application/json";
    if (init.accessToken !== undefined) headers.authorization = `Bearer ${init.accessToken}`;
    if (options.apiKey) headers.apikey = options.apiKey;
    return await requestJson(fetchFn, `${options.baseUrl}${path}`, {
      method,
      headers,
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      credentials: "omit",
      cache: "no-store",
    }, timeoutMs) as T;
  };
}

/**
 * What a project's public key is made of (Supabase's anon JWTs and sb_publishable_ keys): the
 * characters of protocol/reveal-header.ts's HEADER_SAFE_TOKEN, restated because a page is served
 * the sdk files alone (server/static.ts), and empty allowed (no key is then sent).
 */
const HEADER_SAFE_VALUE = /^[\x21-\x7e]*$/;

/** A client's timeoutMs option: the default when absent, else a positive number up to `max`. */
export function checkedTimeout(
  timeoutMs: number | undefined,
  client: string,
  max = Number.MAX_SAFE_INTEGER,
): number {
  const checked = timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!(Number.isFinite(checked) && checked > 0 && checked <= max)) {
    throw new TypeError(`${client}: timeoutMs must be a positive number of at most ${max} ms.`);
  }
  return checked;
}
