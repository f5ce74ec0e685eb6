/**
 * One small database interface over both engines (postgres.js for a server, PGlite embedded), so
 * handlers, migrations and tests never care which one they run on. Opening one is the caller's
 * business: a deployed function opens Postgres (postgres.ts); only the local server, scripts and
 * tests can open PGlite (server/database.ts), so it never enters a function's bundle.
 */

export type Row = Record<string, unknown>;

/**
 * For the transaction it opens: commit without waiting for the WAL flush. Only for writes a crash
 * may forget at no cost (a nonce, a rate-limit count) on routes anyone can call, where a flush per
 * request would let anyone make the database flush at will. A crash forgets at most the last
 * wal_writer_delay (200 ms by default) of them.
 */
const WITHOUT_WAITING_FOR_FLUSH = "set local synchronous_commit = off";

/**
 * `statement` in a transaction of its own that commits without waiting for the flush: its rows,
 * or the first failure (behind a failed setting the statement failed too, the transaction being
 * aborted).
 */
export async function queryWithoutWaitingForFlush<T extends Row>(
  db: Pick<Database, "batch">,
  statement: Statement,
): Promise<T[]> {
  const [setting, outcome] = await db.batch([{ text: WITHOUT_WAITING_FOR_FLUSH }, statement]);
  if (setting.status === "rejected") throw setting.reason;
  if (outcome.status === "rejected") throw outcome.reason;
  return outcome.value as T[];
}

export interface Queryable {
  query<T extends Row = Row>(text: string, params?: readonly unknown[]): Promise<T[]>;
  /** Runs a script of several statements without parameters (migrations). */
  execScript(script: string): Promise<void>;
}

export interface Statement {
  readonly text: string;
  readonly params?: readonly unknown[];
}

export interface Database extends Queryable {
  readonly engine: "postgres" | "pglite";
  /** Runs `work` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * Runs statements known upfront in one transaction. On a server, BEGIN, the statements and
   * COMMIT go out in one write: one round trip, where `transaction` needs a second for its COMMIT.
   * Each statement's outcome is reported, in order; when any failed, nothing was committed (the
   * ones after it fail too, as the transaction was aborted). Rejects when the whole batch could not
   * run (the database is unavailable, or COMMIT failed).
   */
  batch(statements: readonly Statement[]): Promise<PromiseSettledResult<Row[]>[]>;
  /**
   * One statement in a transaction of its own, as `query` runs it, with `use` called on its rows
   * as soon as they arrive: on a server, while the COMMIT is still under way (its wait for the WAL
   * flush, most of a small write's time). What `use` returns is handed back only once the commit
   * succeeded, so nothing made from the rows leaves before the statement's writes are durable;
   * when the commit fails, its error is thrown and `use`'s result dropped. The request's deadline
   * covers the statement and its commit, not `use`: keep `use` to local work (decryption, say).
   */
  queryOverlappingCommit<T extends Row, R>(
    statement: Statement,
    use: (rows: T[]) => R | Promise<R>,
  ): Promise<R>;
  close(): Promise<void>;
}

export type DatabaseSettings =
  | {
    engine: "postgres";
    url: string;
    maxConnections: number;
    prepare: boolean;
    queryTimeoutMs: number;
  }
  | { engine: "pglite"; dataDir: string | null; loadDataDir?: Blob };

export interface CreatorClaims {
  readonly sub: string;
  readonly role: "authenticated";
  readonly session_id?: string;
  readonly wallet_address?: string;
}
