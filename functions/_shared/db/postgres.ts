/**
 * The Database (db.ts) on PostgreSQL through postgres.js: every statement inside a transaction
 * that carries its own statement timeout, sent pipelined in as few writes as possible, each use on a
 * reserved connection of its own (postgres-connections.ts) under one deadline.
 */
import type postgres from "postgres";
import type { Database, Queryable, Row, Statement } from "./db.ts";
import {
  allSettledUnlessLost,
  connectionLost,
  DatabaseDeadlineError,
  withDeadline,
} from "./postgres-failures.ts";
import {
  type OnReservedConnection,
  openReservedConnections,
  type PostgresSettings,
} from "./postgres-connections.ts";

/** What every statement of one database is sent with. */
interface Sending {
  readonly timeoutMs: number;
  readonly statementOptions: { prepare: boolean };
}

/** A use of a reserved connection under a deadline; `isExpired` says the caller has its answer. */
type UnderDeadline = <T>(
  use: (
    reserved: postgres.ReservedSql,
    isExpired: () => boolean,
    markLost: () => void,
  ) => Promise<T>,
) => Promise<T>;

export function openPostgres(settings: PostgresSettings): Database {
  const sending: Sending = {
    timeoutMs: settings.queryTimeoutMs,
    // postgres.js's unsafe() prepares nothing by default, and an unprepared statement with
    // parameters costs two round trips (Parse/Describe, wait, then Bind/Execute) and holds back the
    // statements pipelined behind it. Ours are fixed texts, so each connection prepares each once.
    statementOptions: { prepare: settings.prepare },
  };
  const connections = openReservedConnections(settings);
  const underDeadline = deadlineFor(connections.onReservedConnection, sending.timeoutMs);
  const batch = (
    statements: readonly Statement[],
    whileCommitting?: (replies: Promise<Row[]>[]) => void,
  ) => underDeadline((reserved) => sendBatch(reserved, sending, statements, whileCommitting));

  return {
    engine: "postgres",
    // A statement on its own runs as a one-statement batch: BEGIN, the timeout, the statement and
    // COMMIT leave in one write, so the server-side timeout holds even through a pooler.
    async query<T extends Row>(text: string, params: readonly unknown[] = []) {
      const [outcome] = await batch([{ text, params }]);
      if (outcome.status === "rejected") throw outcome.reason;
      return outcome.value as T[];
    },
    async queryOverlappingCommit<T extends Row, R>(
      statement: Statement,
      use: (rows: T[]) => R | Promise<R>,
    ) {
      let used: Promise<R> | undefined;
      const [outcome] = await batch([statement], ([reply]) => {
        used = reply.then((rows) => use(rows as T[]));
        // Dropped when the commit fails (thrown below instead); never an unhandled rejection.
        used.catch(() => {});
      });
      if (outcome.status === "rejected") throw outcome.reason;
      return await used!;
    },
    // Migrations: no deadline, as a long one must not be cut off.
    execScript: (script) =>
      connections.onReservedConnection(async (reserved) => {
        await reserved.unsafe(script);
      }),
    transaction: (work) =>
      underDeadline((reserved, isExpired, markLost) =>
        runTransaction(reserved, sending, work, isExpired, markLost)
      ),
    batch,
    close: connections.close,
  };
}

/**
 * Runs a use on a reserved connection, for transactions and batches. The whole use shares one
 * deadline, waiting for a connection included. Past it the caller has its 503: a use still
 * waiting never starts, one under way sends no further statement (`isExpired`), so a late write
 * cannot land after a newer acknowledged one.
 */
function deadlineFor(onReservedConnection: OnReservedConnection, timeoutMs: number): UnderDeadline {
  return (use) => {
    let expired = false;
    let expire = (_error: Error) => {};
    const passed = new Promise<never>((_, reject) => expire = reject);
    passed.catch(() => {}); // only ever raced
    const deadline = { expired: () => expired, passed };
    return withDeadline(
      onReservedConnection(
        (reserved, markLost) => use(reserved, deadline.expired, markLost),
        deadline,
      ),
      timeoutMs,
      () => {
        expired = true;
        expire(new DatabaseDeadlineError(timeoutMs));
      },
    );
  };
}

/**
 * BEGIN and the statement timeout, executed now so that they leave in one write with the
 * statements behind them. A plain BEGIN keeps the connection pipelining; sql.begin() would wait
 * for its answer first. `set local` ends with the transaction: a pooled server connection handed
 * to the next client keeps no trace of it.
 */
function begin(reserved: postgres.ReservedSql, { timeoutMs }: Sending) {
  return [
    reserved.unsafe("begin").execute(),
    reserved.unsafe(`set local statement_timeout = ${Math.trunc(timeoutMs)}`).execute(),
  ];
}

/**
 * Statements in one transaction, all sent in one write. `whileCommitting` sees each statement's
 * reply as it comes: the server answers a statement before it runs the COMMIT behind it, so work
 * started there overlaps the commit, while the connection is free again as soon as COMMIT is
 * answered.
 */
async function sendBatch(
  reserved: postgres.ReservedSql,
  sending: Sending,
  statements: readonly Statement[],
  whileCommitting?: (replies: Promise<Row[]>[]) => void,
): Promise<PromiseSettledResult<Row[]>[]> {
  // A failed statement aborts the transaction: the ones behind it fail, and the COMMIT rolls back.
  const [sentBegin, timeout] = begin(reserved, sending);
  const pending = statements.map(({ text, params = [] }) =>
    reserved.unsafe(text, params as postgres.ParameterOrJSON<never>[], sending.statementOptions)
      .execute()
  );
  whileCommitting?.(pending.map((reply) => reply.then((rows) => Array.from(rows) as Row[])));
  const commit = reserved.unsafe("commit").execute();
  // A lost connection throws at once: a statement the driver queued behind one waiting for its
  // Describe (the first run of a prepared statement on this connection) is never answered when
  // the connection dies, and waiting for it held the request to its deadline.
  const [began, timed, ...rest] = await allSettledUnlessLost([
    sentBegin,
    timeout,
    ...pending,
    commit,
  ]);
  const committed = rest.pop()!;
  if (committed.status === "rejected") throw committed.reason;
  // Without BEGIN the statements would have run on their own; that cannot be reported as a batch.
  if (began.status === "rejected") throw began.reason;
  if (timed.status === "rejected") throw timed.reason;
  return rest.map((outcome): PromiseSettledResult<Row[]> =>
    outcome.status === "fulfilled"
      ? { status: "fulfilled", value: Array.from(outcome.value) as Row[] }
      : outcome
  );
}

/** `work` in a transaction whose BEGIN goes out in the same write as its first statements. */
async function runTransaction<T>(
  reserved: postgres.ReservedSql,
  sending: Sending,
  work: (queryable: Queryable) => Promise<T>,
  isExpired: () => boolean,
  markLost: () => void,
): Promise<T> {
  const [began, timeout] = begin(reserved, sending);
  try {
    const [, , result] = await Promise.all([
      began,
      timeout,
      work(queryableOn(reserved, sending, isExpired)),
    ]);
    if (isExpired()) throw new DatabaseDeadlineError(sending.timeoutMs);
    await reserved.unsafe("commit");
    return result;
  } catch (error) {
    if (!connectionLost(error, true)) {
      await reserved.unsafe("rollback").catch((failure) => {
        if (connectionLost(failure, true)) markLost();
      });
    }
    throw error;
  }
}

/** `expired`: the caller was already answered, so nothing more is sent on its behalf. */
function queryableOn(
  reserved: postgres.ReservedSql,
  { timeoutMs, statementOptions }: Sending,
  expired: () => boolean,
): Queryable {
  return {
    async query<T extends Row>(text: string, params: readonly unknown[] = []) {
      if (expired()) throw new DatabaseDeadlineError(timeoutMs);
      // execute() now, not at the first await: statements go out in the order they were asked
      // for, which pipelining (sending the next before the last is answered) relies on.
      const rows = await reserved.unsafe(
        text,
        params as postgres.ParameterOrJSON<never>[],
        statementOptions,
      ).execute();
      // A plain array, the same shape PGlite returns (postgres.js hands back an Array subclass).
      return Array.from(rows) as unknown as T[];
    },
    async execScript(script: string) {
      if (expired()) throw new DatabaseDeadlineError(timeoutMs);
      await reserved.unsafe(script);
    },
  };
}
