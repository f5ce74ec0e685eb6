/**
 * One JSON call from the browser client to the service: no cookies, no cache, the service's error
 * answer turned into a VaultError. Erasable TypeScript only (served to browsers as is).
 */
import { serviceError, VaultError } from "./errors.ts";

export interface ServiceCallOptions {
  /** The API root without a trailing slash. */
  readonly baseUrl: string;
  readonly fetch?: typeof fetch;
  /** A Supabase anon or publishable key, sent as `apikey`. */
  readonly apiKey?: string;
}

export type ServiceCall = <T>(
  method: "GET" | "POST" | "PUT" | "DELETE",
  path: string,
  init?: { body?: unknown; accessToken?: string },
) => Promise<T>;

export function createServiceCall(options: ServiceCallOptions): ServiceCall {
  const fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
  return async function call<T>(
    method: "GET" | "POST" | "PUT" | "DELETE",
    path: string,
    init: { body?: unknown; accessToken?: string } = {},
  ): Promise<T> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (init.body !== undefined) headers["content-type"] = "application/json";
    if (init.accessToken !== undefined) headers.authorization = `Bearer ${init.accessToken}`;
    if (options.apiKey) headers.apikey = options.apiKey;
    let response: Response;
    try {
      response = await fetchImpl(`${options.baseUrl}${path}`, {
        method,
        headers,
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
        credentials: "omit",
        cache: "no-store",
      });
    } catch (cause) {
      throw new VaultError("network_error", "The vault service could not be reached.", { cause });
    }
    if (response.status === 204) return undefined as T;
    let body: unknown;
    try {
      body = await response.json();
    } catch (cause) {
      throw new VaultError("invalid_response", `The service answered ${response.status}.`, {
        status: response.status,
        cause,
      });
    }
    if (!response.ok) {
      throw serviceError(response.status, body) ??
        new VaultError("invalid_response", `The service answered ${response.status}.`, {
          status: response.status,
        });
    }
    return body as T;
  };
}
