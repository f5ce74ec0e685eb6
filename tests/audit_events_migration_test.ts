/**
 * Migration 20261125060000 (one audit event per reveal) on a database that already has a trail:
 * every event written in the old shape, one type per row, keeps its type, and the new column
 * refuses an event that names no type. On embedded PGlite always, on PostgreSQL too when
 * DATABASE_URL is set.
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import type { Database } from "../functions/_shared/db/db.ts";
import { openDatabase } from "../server/database.ts";
import { migrate, readMigrations } from "../scripts/lib/migrations.ts";
import { testEngines } from "./support/database.ts";

const ONE_EVENT_PER_REVEAL = "20261125060000";
const CREATOR = "d0000000-0000-4000-8000-000000000001";
const CHECK_VIOLATION = "23514";

/** An empty database on `engine`, not yet migrated, and how to remove it. */
async function emptyDatabase(engine: "pglite" | "postgres") {
  if (engine === "pglite") {
    const db = await openDatabase({ engine: "pglite", dataDir: null });
    return { db, drop: () => db.close() };
  }
  const adminUrl = Deno.env.get("DATABASE_URL")!;
  const name = `wallet_vault_migration_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const db: Database = await openDatabase({
    engine: "postgres",
    url: url.toString(),
    maxConnections: 2,
    prepare: true,
    queryTimeoutMs: 30_000,
  });
  return {
    db,
    async drop() {
      try {
        await db.close();
      } finally {
        await admin.unsafe(`drop database if exists ${name} with (force)`);
        await admin.end();
      }
    },
  };
}

for (const engine of testEngines()) {
  Deno.test({
    name: `${engine}: events written before one event per reveal keep their one type each`,
    sanitizeOps: false,
    sanitizeResources: false,
    async fn() {
      const migrations = await readMigrations();
      const before = migrations.filter((m) => m.version < ONE_EVENT_PER_REVEAL);
      assert.ok(before.length < migrations.length, "the migration exists");
      const { db, drop } = await emptyDatabase(engine);
      try {
        await migrate(db, before);
        await db.query(
          "insert into public.wallet_users (id, wallet_address) values ($1, '0x' || repeat('cd', 20))",
          [CREATOR],
        );
        // The old shape: a put, then a reveal of two types as two rows, then a failed one.
        await db.query(
          `insert into public.secret_events (user_id, secret_type, action)
             values ($1, 'provider_b_key', 'put'), ($1, 'provider_b_key', 'reveal'),
                    ($1, 'provider_c_key', 'reveal'), ($1, 'provider_c_key', 'reveal_failed')`,
          [CREATOR],
        );

        assert.deepEqual(await migrate(db), [
          ...migrations.filter((m) => m.version >= ONE_EVENT_PER_REVEAL).map((m) => m.version),
        ]);

        const trail = await db.query<{ action: string; secret_types: string[] }>(
          "select action, secret_types from public.secret_events where user_id = $1 order by id",
          [CREATOR],
        );
        assert.deepEqual(trail.map((e) => [e.action, e.secret_types]), [
          ["put", ["provider_b_key"]],
          ["reveal", ["provider_b_key"]],
          ["reveal", ["provider_c_key"]],
          ["reveal_failed", ["provider_c_key"]],
        ]);
        for (
          const types of ["{}", "{provider_b_key,NULL}", "{{provider_b_key},{provider_c_key}}"]
        ) {
          await assert.rejects(
            db.query(
              `insert into public.secret_events (user_id, secret_types, action)
                 values ($1, $2::text[], 'reveal')`,
              [CREATOR, types],
            ),
            (error: { code?: string }) => error.code === CHECK_VIOLATION,
            `an event naming ${types}`,
          );
        }
      } finally {
        await drop();
      }
    },
  });
}
