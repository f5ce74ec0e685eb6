/**
 * Opens either engine for the local server, operator scripts, tests and the bench. It lives outside
 * functions/ on purpose: PGlite, heavier than a deployed bundle may be, must never be reachable from
 * a deployed function's graph.
 */
import type { Database, DatabaseSettings } from "../functions/_shared/db/db.ts";
import { openPostgres } from "../functions/_shared/db/postgres.ts";

export async function openDatabase(settings: DatabaseSettings): Promise<Database> {
  if (settings.engine === "postgres") return openPostgres(settings);
  // Imported only when asked for: a Postgres-only caller (db:migrate) skips loading PGlite.
  const { openPglite } = await import("./db-pglite.ts");
  return openPglite(settings);
}
