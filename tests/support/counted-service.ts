/**
 * The service in-process over a test's database with every database call counted (query, batch,
 * transaction, a read overlapping its commit), for tests that hold a route to its round trips; and
 * the creator's audit trail those routes write.
 */
import { createServiceContext } from "../../functions/_shared/context.ts";
import type { Database } from "../../functions/_shared/db/db.ts";
import { type Logger } from "../../functions/_shared/http/log.ts";
import { silentLogger } from "./log.ts";
import { createLocalApp } from "../../server/app.ts";
import { TEST_ORIGIN, type TestApp } from "./app.ts";

export interface CountedService {
  readonly handler: (request: Request) => Promise<Response>;
  /** Database calls made so far; a request's are the difference across it. */
  calls(): number;
}

/** A new handler (so a process of its own, with its own memory) over `app`'s database. */
export function countedService(app: TestApp, log: Logger = silentLogger): CountedService {
  const db = app.database.db;
  let calls = 0;
  const counted: Database = {
    engine: db.engine,
    query: (text, params) => (calls++, db.query(text, params)),
    execScript: (script) => (calls++, db.execScript(script)),
    transaction: (work) => (calls++, db.transaction(work)),
    batch: (statements) => (calls++, db.batch(statements)),
    queryOverlappingCommit: (
      statement,
      use,
    ) => (calls++, db.queryOverlappingCommit(statement, use)),
    close: () => db.close(),
  };
  const { handler } = createLocalApp(
    createServiceContext(app.config, counted, log, { ownOrigins: [TEST_ORIGIN] }),
  );
  return { handler, calls: () => calls };
}

/** The creator's audit trail: each event's action and the types it names, oldest first. */
export async function auditTrail(app: TestApp, userId: string): Promise<[string, string[]][]> {
  const rows = await app.database.db.query<{ action: string; secret_types: string[] }>(
    "select action, secret_types from public.secret_events where user_id = $1 order by id",
    [userId],
  );
  return rows.map((row) => [row.action, row.secret_types]);
}
