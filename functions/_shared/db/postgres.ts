import postgres from "postgres";
import { fromHex, toHex } from "../bytes.ts";
import type { Database, DatabaseSettings, Queryable, Row, Statement } from "./db.ts";
import {
  allSettledUnlessLost,
  connectionLost,
  DatabaseDeadlineError,
  guardDriverFailures,
  withDeadline,
} from "./postgres-failures.ts";
import { createConnectionStack, type EndingState } from "./connection-stack.ts";

type PostgresSettings = Extract<DatabaseSettings, { engine: "postgres" }>;

/** A use's deadline: whether it has passed, and a promise that rejects when it does. */
interface Deadline {
  readonly expired: () => boolean;
  readonly passed: Promise<never>;
}

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

/** The longest the driver waits before it connects again. */
const RECONNECT_CAP_MS = 100;

/** A driver instance of one connection: which connection a use gets is the stack's choice. */
function openInstance(settings: PostgresSettings): postgres.Sql {
  return postgres(settings.url, {
    max: 1,
    // Supabase's transaction pooler cannot keep prepared statements; DATABASE_PREPARE=false.
    prepare: settings.prepare,
    connect_timeout: Math.max(1, Math.ceil(settings.queryTimeoutMs / 1000)),
    idle_timeout: 30,
    // The default backoff grows to 20 s between reconnects, and queued requests wait it out, long
    // past their deadline, even after the database is back. Capped at 100 ms: an outage answers
    // 503 at once and recovery is noticed at once, while reconnects stay bounded by the number of
    // instances.
    backoff: (attempt: number) => Math.min(0.02 * attempt, RECONNECT_CAP_MS / 1000),
    onnotice: () => {},
    types: { bytea: BYTEA },
    // Nothing but application_name at startup: a transaction pooler refuses other startup
    // parameters (PgBouncer: "unsupported startup parameter"). The statement timeout is set
    // inside each transaction instead (SET_TIMEOUT).
    connection: { application_name: "wallet-vault" },
    // fetch_types stays on (the default): postgres.js 3.4.9 answers a reserve() that has to open
    // the connection only after the array types query, and without it never.
  });
}

export function openPostgres(settings: PostgresSettings): Database {
  const timeoutMs = settings.queryTimeoutMs;
  /**
   * Pipelined right after BEGIN, so it costs no round trip. `set local` ends with the transaction:
   * a pooled server connection handed to the next client keeps no trace of it.
   */
  const SET_TIMEOUT = `set local statement_timeout = ${Math.trunc(timeoutMs)}`;

  // postgres.js's unsafe() prepares nothing by default, and an unprepared statement with parameters
  // costs two round trips (Parse/Describe, wait, then Bind/Execute) and holds back the statements
  // pipelined behind it. Ours are fixed texts, so each connection prepares each one once.
  const statementOptions = { prepare: settings.prepare };

  // Up to maxConnections instances, each held by one use at a time, the warmest handed out first.
  const instances = createConnectionStack({
    max: settings.maxConnections,
    open: () => openInstance(settings),
    // A use still under way ends by its deadline; it is cut off after that. One replaced after a
    // failed connection is ended once the driver's reconnect for the failed request (within the
    // backoff cap) has been made: ended sooner, that reconnect would open a connection no one ends.
    end: async (instance: postgres.Sql, state: EndingState) => {
      if (state === "replaced") {
        await new Promise((resolve) => setTimeout(resolve, 2 * RECONNECT_CAP_MS));
      }
      await instance.end({ timeout: state === "busy" ? Math.ceil(timeoutMs / 1000) : 0 });
    },
  });
  // Which instance raced cannot be told, so every one is replaced (rare).
  const stopGuarding = guardDriverFailures(() => instances.replaceAll());

  /**
   * Runs `use` on the connection of an instance of its own, reserved: should the server close it
   * mid-transaction, the statements still queued for it stay there, where the instance itself would
   * connect again and run them outside the transaction. A connection the server closed while idle
   * is opened again by the driver when reserved.
   *
   * The instance is replaced, neither reused nor released, after a lost connection (postgres.js
   * 3.4.9 can leave the connection object wedged, see postgres-failures.ts, and releasing a closed
   * reserved connection would put it among the driver's open ones), and after a failed reserve:
   * the driver keeps the failed request queued and connects again for it, and a reserve made
   * meanwhile becomes that connection's first request, which is never answered. A reserve still
   * waiting at the deadline is given up the same way.
   */
  const onReservedConnection = async <T>(
    use: (reserved: postgres.ReservedSql, markLost: () => void) => Promise<T>,
    deadline?: Deadline,
  ): Promise<T> => {
    const instance = await instances.acquire();
    let reserved: postgres.ReservedSql | undefined;
    let unusable = false;
    try {
      if (deadline?.expired()) throw new DatabaseDeadlineError(timeoutMs);
      const reserving = instance.reserve();
      try {
        reserved = await (deadline ? Promise.race([reserving, deadline.passed]) : reserving);
      } catch (error) {
        unusable = true;
        // Granted after all: given back, so that the replaced instance can end.
        reserving.then((late) => late.release(), () => {});
        throw error;
      }
      if (deadline?.expired()) throw new DatabaseDeadlineError(timeoutMs);
      return await use(reserved, () => unusable = true);
    } catch (error) {
      if (connectionLost(error, true)) unusable = true;
      throw error;
    } finally {
      if (unusable) {
        instances.replace(instance);
      } else {
        reserved?.release();
        instances.release(instance);
      }
    }
  };

  /** `expired`: the caller was already answered, so nothing more is sent on its behalf. */
  const on = (reserved: postgres.ReservedSql, expired: () => boolean): Queryable => ({
    async query<T extends Row>(text: string, params: readonly unknown[] = []) {
      if (expired()) throw new DatabaseDeadlineError(timeoutMs);
      // execute() now, not at the first await: statements go out in the order they were asked
      // for, which pipelining (sending the next before the last is answered) relies on.
      const rows = await reserved.unsafe(
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
      await reserved.unsafe(script);
    },
  });

  /**
   * Runs `use` on a reserved connection, for transactions and batches. The whole use shares one
   * deadline, waiting for a connection included. Past it the caller has its 503: a use still
   * waiting never starts, one under way sends no further statement (`isExpired`), so a late write
   * cannot land after a newer acknowledged one.
   */
  const underDeadline = <T>(
    use: (
      reserved: postgres.ReservedSql,
      isExpired: () => boolean,
      markLost: () => void,
    ) => Promise<T>,
  ): Promise<T> => {
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

  /**
   * BEGIN and the statement timeout, executed now so that they leave in one write with the
   * statements behind them. A plain BEGIN keeps the connection pipelining; sql.begin() would wait
   * for its answer first.
   */
  const begin = (reserved: postgres.ReservedSql) => [
    reserved.unsafe("begin").execute(),
    reserved.unsafe(SET_TIMEOUT).execute(),
  ];

  /**
   * `whileCommitting` sees each statement's reply as it comes: the server answers a statement
   * before it runs the COMMIT behind it, so work started there overlaps the commit, while the
   * connection is free again as soon as COMMIT is answered.
   */
  const batch = (
    statements: readonly Statement[],
    whileCommitting?: (replies: Promise<Row[]>[]) => void,
  ) =>
    underDeadline(async (reserved) => {
      // All executed now, so they leave in one write. A failed statement aborts the
      // transaction: the ones behind it fail, and the COMMIT rolls back.
      const [sentBegin, timeout] = begin(reserved);
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
    // Migrations: no deadline, as a long one must not be cut off.
    execScript: (script) =>
      onReservedConnection(async (reserved) => {
        await reserved.unsafe(script);
      }),
    transaction: (work) =>
      underDeadline(async (reserved, isExpired, markLost) => {
        // BEGIN goes out in the same write as the work's first statements.
        const [began, timeout] = begin(reserved);
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
      stopGuarding();
      await instances.close();
    },
  };
}
