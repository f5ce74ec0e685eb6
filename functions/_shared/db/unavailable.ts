/**
 * Which driver errors mean the database cannot be reached right now (answered 503, not 500), on
 * both engines; among them, the ones after which an established connection is gone.
 */

/** An established connection is gone: postgres.js's own codes, and Postgres' SQLSTATEs. */
export const CONNECTION_LOST_CODES: readonly string[] = [
  "CONNECTION_CLOSED",
  "ECONNRESET",
  "EPIPE",
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "08003", // connection_does_not_exist
  "08006", // connection_failure
];

const UNAVAILABLE_CODES = new Set([
  ...CONNECTION_LOST_CODES,
  "ECONNREFUSED",
  "ETIMEDOUT",
  "CONNECT_TIMEOUT",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "57P03", // cannot_connect_now
  "57014", // query_canceled (statement_timeout)
  "53300", // too_many_connections
  "08000",
  "08001",
]);

export function isDatabaseUnavailable(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && UNAVAILABLE_CODES.has(code)) return true;
  const name = (error as { name?: unknown }).name;
  return name === "ConnectionRefused" || name === "ConnectionReset" || name === "TimedOut";
}

/**
 * isDatabaseUnavailable without a statement cut off by its timeout (57014): the database was
 * reached, so a start-up step or a migration that fails so keeps its own error.
 */
export function isConnectionFailure(error: unknown): boolean {
  return isDatabaseUnavailable(error) && (error as { code?: unknown }).code !== "57014";
}
