import postgres from "postgres";
import { fromHex, toHex } from "../bytes.ts";
import type { Database, DatabaseSettings, Queryable, Row, Statement } from "./db.ts";
import {
  allSettledUnlessLost,
  connectionLost,
  DatabaseDeadlineError,
  guardWriteAfterClose,
  withDeadline,
} from "./postgres-failures.ts";

type PostgresSettings = Extract<DatabaseSettings, { engine: "postgres" }>;

/**
 * bytea both ways through the engine's native hex codec where it has one (../bytes.ts): the
 * driver's default goes through Deno's Buffer hex code, which is JavaScript. Values come back as
 * plain Uint8Arrays, as PGlite returns them.
 */
const BYTEA = {
  to: 17,
  from: [17],
  serialize: (bytes: Uint8Array) => `\\x${toHex(bytes)}`,
  parse: (text: string) => fromHex(text.slice(2)),
};

export function openPostgres(settings: PostgresSettings): Database {
  const timeoutMs = settings.queryTimeoutMs;
  const connect = () =>
    postgres(settings.url, {
      max: settings.maxConnections,
      // Supabase's transaction pooler cannot keep prepared statements; DATABASE_PREPARE=false.
      prepare: settings.prepare,
      connect_timeout: Math.max(1, Math.ceil(timeoutMs / 1000)),
      idle_timeout: 30,
      // The default backoff grows to 20 s between reconnects, and queued requests wait it out, long
      // past their deadline, even after the database is back. Capped at 100 ms: an outage answers
      // 503 at once and recovery is noticed at once, while reconnects stay bounded by the pool size.
      backoff: (attempt: number) => Math.min(0.02 * attempt, 0.1),
      onnotice: () => {},
      types: { bytea: BYTEA },
      // Nothing but application_name at startup: a transaction pooler refuses other startup
      // parameters (PgBouncer: "unsupported startup parameter"). The statement timeout is set
      // inside each transaction instead (SET_TIMEOUT).
      connection: { application_name: "wallet-vault" },
    });
  /**
   * Pipelined right after BEGIN, so it costs no round trip. `set local` ends with the transaction:
   * a pooled server connection handed to the next client keeps no trace of it.
   */
  const SET_TIMEOUT = `set local statement_timeout = ${Math.trunc(timeoutMs)}`;
  /** A plain BEGIN, executed now: sql.begin() would wait for its answer before the work is sent. */
  const begin = (reserved: postgres.ReservedSql) => reserved.unsafe("begin").execute();

  // postgres.js's unsafe() prepares nothing by default, and an unprepared statement with parameters
  // costs two round trips (Parse/Describe, wait, then Bind/Execute) and holds back the statements
  // pipelined behind it. Ours are fixed texts, so each connection prepares each one once.
  const statementOptions = { prepare: settings.prepare };

  let sql = connect();
  let closed = false;
  const retiring = new Set<Promise<void>>();
  /** Swaps in a fresh pool once per lost one; the old pool finishes what is in flight, then ends. */
  const replace = (failed: postgres.Sql) => {
    if (closed || failed !== sql) return;
    sql = connect();
    const ending = failed.end({ timeout: Math.ceil(timeoutMs / 1000) }).catch(() => {});
    retiring.add(ending);
    ending.finally(() => retiring.delete(ending));
  };
  const onLost = (error: unknown, pool: postgres.Sql) => {
    if (connectionLost(error)) replace(pool);
  };
  const stopGuarding = guardWriteAfterClose(() => replace(sql));

  /** `expired`: the caller was already answered, so nothing more is sent on its behalf. */
  const on = (
    runner: postgres.Sql | postgres.TransactionSql,
    expired = () => false,
  ): Queryable => ({
    async query<T extends Row>(text: string, params: readonly unknown[] = []) {
      if (expired()) throw new DatabaseDeadlineError(timeoutMs);
      // execute() now, not at the first await: statements go out in the order they were asked
      // for, which pipelining (sending the next before the last is answered) relies on.
      const rows = await runner.unsafe(
        text,
        params as postgres.ParameterOrJSON<never>[],
        statementOptions,
      )
        .execute();
      // A plain array, the same shape PGlite returns (postgres.js hands back an Array subclass).
      return Array.from(rows) as unknown as T[];
    },
    async execScript(script: string) {
      if (expired()) throw new DatabaseDeadlineError(timeoutMs);
      await runner.unsafe(script);
    },
  });

  /**
   * Runs `use` on a connection reserved from the pool, for transactions and batches. The whole use
   * shares one deadline, waiting for a connection included. Past it the caller has its 503: a use
   * still queued never starts, one under way sends no further statement (`isExpired`), so a late
   * write cannot land after a newer acknowledged one.
   */
  const onReservedConnection = async <T>(
    use: (
      reserved: postgres.ReservedSql,
      isExpired: () => boolean,
      markLost: () => void,
    ) => Promise<T>,
  ): Promise<T> => {
    const pool = sql;
    let expired = false;
    const isExpired = () => expired;
    const run = async () => {
      const reserved = await pool.reserve();
      // A connection that died is taken back by the driver when it closes; releasing it as well
      // would hand a dead connection to the next query.
      let gone = false;
      try {
        if (expired) throw new DatabaseDeadlineError(timeoutMs);
        return await use(reserved, isExpired, () => gone = true);
      } catch (error) {
        if (connectionLost(error, true)) gone = true;
        throw error;
      } finally {
        if (!gone) reserved.release();
      }
    };
    try {
      return await withDeadline(run(), timeoutMs, () => expired = true);
    } catch (error) {
      onLost(error, pool);
      throw error;
    }
  };

  /**
   * `whileCommitting` sees each statement's reply as it comes: the server answers a statement
   * before it runs the COMMIT behind it, so work started there overlaps the commit, while the
   * connection goes back to the pool as soon as COMMIT is answered.
   */
  const batch = (
    statements: readonly Statement[],
    whileCommitting?: (replies: Promise<Row[]>[]) => void,
  ) =>
    onReservedConnection(async (reserved) => {
      // All executed now, so they leave in one write. A failed statement aborts the
      // transaction: the ones behind it fail, and the COMMIT rolls back.
      const sentBegin = begin(reserved);
      const timeout = reserved.unsafe(SET_TIMEOUT).execute();
      const pending = statements.map(({ text, params = [] }) =>
        reserved.unsafe(text, params as postgres.ParameterOrJSON<never>[], statementOptions)
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
      const outcomes = rest;
      if (committed.status === "rejected") throw committed.reason;
      // Without BEGIN the statements would have run on their own; that cannot be reported
      // as a batch.
      if (began.status === "rejected") throw began.reason;
      if (timed.status === "rejected") throw timed.reason;
      return outcomes.map((outcome): PromiseSettledResult<Row[]> =>
        outcome.status === "fulfilled"
          ? { status: "fulfilled", value: Array.from(outcome.value) as Row[] }
          : outcome
      );
    });

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
    execScript: (script) => on(sql).execScript(script),
    transaction: (work) =>
      onReservedConnection(async (reserved, isExpired, markLost) => {
        // BEGIN goes out in the same write as the work's first statements (sql.begin() would wait
        // for BEGIN's answer first).
        const began = begin(reserved);
        const timeout = reserved.unsafe(SET_TIMEOUT).execute();
        try {
          const [, , result] = await Promise.all([began, timeout, work(on(reserved, isExpired))]);
          if (isExpired()) throw new DatabaseDeadlineError(timeoutMs);
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
      }),
    batch,
    async close() {
      closed = true;
      stopGuarding();
      await Promise.all([sql.end({ timeout: 5 }), ...retiring]);
    },
  };
}
