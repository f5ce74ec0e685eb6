/**
 * How postgres.js connections fail, for postgres.ts: the deadline every use shares, the errors
 * that mean a connection is gone, and the guards against the driver's two process-ending failures.
 */
import { CONNECTION_LOST_CODES } from "./unavailable.ts";

/**
 * The one error for "the database did not answer in time": its code is one isDatabaseUnavailable
 * knows, so the HTTP layer turns it into 503 database_unavailable.
 */
export class DatabaseDeadlineError extends Error {
  readonly code = "ETIMEDOUT";
  constructor(timeoutMs: number) {
    super(`The database did not answer within ${timeoutMs} ms.`);
    this.name = "DatabaseDeadlineError";
  }
}

/**
 * Failures after which an established connection is gone. postgres.js 3.4.9 can leave such a
 * connection object wedged (a write scheduled before the close is kept and blocks the next startup
 * message), so the driver instance that saw one is replaced rather than reused.
 */
const CONNECTION_LOST = new Set(CONNECTION_LOST_CODES);

/** Whether `error` means the connection is gone (`destroyed`: also when the driver ended it). */
export function connectionLost(error: unknown, destroyed = false): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" &&
    (CONNECTION_LOST.has(code) || (destroyed && code === "CONNECTION_DESTROYED"));
}

/** Promise.allSettled, except that a lost connection rejects at once, with its error. */
export function allSettledUnlessLost<T>(
  promises: readonly Promise<T>[],
): Promise<PromiseSettledResult<T>[]> {
  return new Promise((resolve, reject) => {
    for (const promise of promises) {
      promise.catch((error: unknown) => {
        if (connectionLost(error, true)) reject(error);
      });
    }
    Promise.allSettled(promises).then(resolve);
  });
}

/** Settles like `operation`, or rejects with DatabaseDeadlineError after `ms`. */
export function withDeadline<T>(
  operation: PromiseLike<T>,
  ms: number,
  onExpiry?: () => void,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onExpiry?.();
      reject(new DatabaseDeadlineError(ms));
    }, ms);
  });
  return Promise.race([operation, deadline]).finally(() => clearTimeout(timer));
}

// Two postgres.js 3.4.9 failures that happen outside any promise of ours, and would end the
// process. Only these exact errors are stopped here; any other uncaught error or unhandled
// rejection ends the process, as it would without these guards.
//
// The write-after-close race (porsager/postgres#1154, #1208; fix proposed in #1209): a write
// scheduled with setImmediate can run after the connection closed and throw from the timer. It
// happens when a statement is sent on a reserved connection the database closed (a transaction's
// next statement, or its ROLLBACK). The driver instances are replaced since the connection object
// is left wedged, and the request waiting on it is answered by its deadline.
//
// The array types query: the driver runs it on each new connection from a message handler that
// drops its promise, so a connection lost or ended during it (a database going away just after a
// reconnect, or a replaced instance ended) rejects with no handler. The request that connection
// was opened for is answered by its deadline, like any request on a lost connection.

const writeRaceResets = new Set<() => void>();
let guardsInstalled = false;

/**
 * Stops the driver's two process-ending failures, running `reset` (replacing the instances) after
 * each write-after-close race, until the returned function is called.
 */
export function guardDriverFailures(reset: () => void): () => void {
  writeRaceResets.add(reset);
  installGuards();
  return () => writeRaceResets.delete(reset);
}

function installGuards(): void {
  if (guardsInstalled || typeof globalThis.addEventListener !== "function") return;
  guardsInstalled = true;
  globalThis.addEventListener("error", (event) => {
    if (!isWriteAfterClose(event.error)) return;
    event.preventDefault();
    for (const reset of writeRaceResets) reset();
  });
  globalThis.addEventListener("unhandledrejection", (event) => {
    if (isLostArrayTypesQuery(event.reason)) event.preventDefault();
  });
}

function isWriteAfterClose(error: unknown): boolean {
  return error instanceof TypeError &&
    error.message.includes("(reading 'write')") &&
    /nextWrite[^\n]*[/\\]postgres[/\\][^\n]*connection\.js/.test(error.stack ?? "");
}

/**
 * The driver names the failed query on its error: the array types one reads pg_type by category.
 */
function isLostArrayTypesQuery(reason: unknown): boolean {
  const query = (reason as { query?: unknown } | null)?.query;
  return connectionLost(reason, true) && typeof query === "string" &&
    query.includes("pg_catalog.pg_type") && query.includes("typcategory = 'A'");
}
