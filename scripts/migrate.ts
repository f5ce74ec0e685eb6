/**
 * `deno task db:migrate`: applies supabase/migrations to DATABASE_URL (or SUPABASE_DB_URL).
 * Safe to run again: applied versions are recorded and skipped.
 */
import { databaseUrl, processEnv } from "../functions/_shared/config/env-schema.ts";
import { parseDatabaseUrl, preparesStatements } from "../functions/_shared/config/parse.ts";
import { openDatabase } from "../server/database.ts";
import { startupRefusal } from "../server/local-settings.ts";
import { migrate } from "../server/migrations.ts";

const env = processEnv();
const given = databaseUrl(env);
if (!given) {
  console.error(
    "db:migrate needs DATABASE_URL (or SUPABASE_DB_URL) pointing at a Postgres server.",
  );
  Deno.exit(1);
}
// Checked as the service checks it: a URL the driver cannot read would be quoted whole, password
// and all, in its error.
const problems: string[] = [];
const target = parseDatabaseUrl(given.url, given.name, problems);
if (target === null) {
  console.error(`db:migrate: ${problems.join("\n")}`);
  Deno.exit(1);
}
const db = await openDatabase({
  engine: "postgres",
  url: target.url,
  maxConnections: 1,
  prepare: preparesStatements(target, env.DATABASE_PREPARE),
  queryTimeoutMs: 60_000,
});
try {
  const applied = await migrate(db);
  console.log(
    applied.length === 0 ? "migrations: up to date" : `migrations: applied ${applied.join(", ")}`,
  );
} catch (error) {
  // Unreachable is one line; a failing migration keeps its whole error.
  const refusal = startupRefusal(error);
  if (refusal === null) throw error;
  console.error(`db:migrate: ${refusal}`);
  Deno.exitCode = 1;
} finally {
  await db.close();
}
