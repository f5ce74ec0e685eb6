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

/**
 * The database was reached, but could not finish this statement now; the same request succeeds if
 * sent again. Postgres ends one transaction of a deadlock or a serialization conflict on purpose.
 */
const REACHED_BUT_BUSY_CODES: readonly string[] = [
  "57014", // query_canceled (statement_timeout)
  "40P01", // deadlock_detected
  "40001", // serialization_failure
];

const UNAVAILABLE_CODES = new Set([
  ...CONNECTION_LOST_CODES,
  ...REACHED_BUT_BUSY_CODES,
  "ECONNREFUSED",
  "ETIMEDOUT",
  "CONNECT_TIMEOUT",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "57P03", // cannot_connect_now
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
 * isDatabaseUnavailable without the errors of a database that was reached (a statement cut off by
 * its timeout, a deadlock): a start-up step or a migration that fails so keeps its own error.
 */
export function isConnectionFailure(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return isDatabaseUnavailable(error) && !REACHED_BUT_BUSY_CODES.includes(code as string);
}
