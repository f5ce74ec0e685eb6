/**
 * Applies `supabase/migrations/*.sql` in name order, each once. The record lives in the same table
 * the Supabase CLI keeps (`supabase_migrations.schema_migrations`), so `supabase db push` and this
 * runner agree on what has been applied.
 */
import type { Database } from "../functions/_shared/db/db.ts";

const MIGRATIONS_DIR = new URL("../supabase/migrations/", import.meta.url);

export interface Migration {
  readonly version: string;
  readonly name: string;
  readonly sql: string;
}

export async function readMigrations(dir: URL = MIGRATIONS_DIR): Promise<Migration[]> {
  const migrations: Migration[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const match = entry.isFile && /^(\d+)_(.+)\.sql$/.exec(entry.name);
    if (!match) continue;
    const sql = await Deno.readTextFile(new URL(entry.name, dir));
    migrations.push({ version: match[1], name: match[2], sql });
  }
  return migrations.sort((a, b) => a.version.localeCompare(b.version));
}

/**
 * Serialises concurrent runners (two servers starting at once) on the same database: every step,
 * the record table's creation included ("if not exists" alone races on a fresh database).
 */
const RUNNERS_LOCK = "select pg_advisory_xact_lock(7201120)";

/** Returns the versions it applied now (empty when the database was already up to date). */
export async function migrate(db: Database, migrations?: Migration[]): Promise<string[]> {
  const pending = migrations ?? await readMigrations();
  await db.transaction(async (tx) => {
    await tx.query(RUNNERS_LOCK);
    await tx.execScript(`
      create schema if not exists supabase_migrations;
      create table if not exists supabase_migrations.schema_migrations (
        version text primary key, statements text[], name text
      );`);
  });
  const applied: string[] = [];
  for (const migration of pending) {
    const ran = await db.transaction(async (tx) => {
      await tx.query(RUNNERS_LOCK);
      const done = await tx.query(
        "select 1 from supabase_migrations.schema_migrations where version = $1",
        [migration.version],
      );
      if (done.length > 0) return false;
      await tx.execScript(migration.sql);
      await tx.query(
        "insert into supabase_migrations.schema_migrations (version, name) values ($1, $2)",
        [migration.version, migration.name],
      );
      return true;
    });
    if (ran) applied.push(migration.version);
  }
  return applied;
}
