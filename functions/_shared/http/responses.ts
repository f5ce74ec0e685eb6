/**
 * JSON answers, and the mapping of every failure to a safe JSON error: a ServiceError becomes its
 * own answer, a lost database a 503, anything else a generic 500 whose details stay in the log
 * (by name and code only, since driver messages can quote parameters).
 */
import { isDatabaseUnavailable } from "../db/unavailable.ts";
import { ServiceError } from "./errors.ts";
import type { Logger } from "./log.ts";

const NO_STORE = { "cache-control": "no-store" };
const JSON_HEADERS = { "content-type": "application/json; charset=utf-8", ...NO_STORE };

export function json(body: unknown, status = 200, headers?: HeadersInit): Response {
  const response = new Response(JSON.stringify(body), { status, headers: JSON_HEADERS });
  // Most answers add nothing: no Headers object is built for them.
  if (headers !== undefined) {
    for (const [name, value] of new Headers(headers)) response.headers.set(name, value);
  }
  return response;
}

/** 204: nothing to say, and like every answer, not to be stored. */
export function noContent(): Response {
  return new Response(null, { status: 204, headers: NO_STORE });
}

/**
 * A ServiceError as its JSON answer. An error that asks the client to wait (`retryAfterSeconds` in
 * its details) says so as Retry-After too, so no error can state one and not the other.
 */
export function errorResponse(error: ServiceError): Response {
  const retryAfter = error.details?.retryAfterSeconds;
  return json(
    { error: { code: error.code, message: error.message, ...error.details } },
    error.status,
    typeof retryAfter === "number"
      ? { ...error.headers, "retry-after": String(retryAfter) }
      : error.headers,
  );
}

/** What a 503 database_unavailable asks a client to wait (errorResponse adds Retry-After). */
const DATABASE_RETRY_AFTER_SECONDS = 1;

export function toServiceError(error: unknown, log: Logger): ServiceError {
  if (error instanceof ServiceError) return error;
  if (isDatabaseUnavailable(error)) {
    log.error("database_unavailable", { code: errorCode(error) });
    return new ServiceError(
      "database_unavailable",
      "The database is unavailable; retry shortly.",
      { retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS },
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
