/**
 * Test databases on both engines. PGlite: the migrated data directory is built once per run (and
 * cached on disk by the migrations' hash), then each test file boots from a copy in about a
 * second. Real Postgres (when DATABASE_URL is set): each test file gets a fresh database, dropped
 * when it closes, so runs never see each other's rows.
 */
import type { Database } from "../../functions/_shared/db/db.ts";
import { openDatabase } from "../../server/database.ts";
import { migrate, readMigrations } from "../../server/migrations.ts";
import { createFreshPostgres } from "./fresh-postgres.ts";

export type Engine = Database["engine"];

export function testEngines(): Engine[] {
  return Deno.env.get("DATABASE_URL") ? ["pglite", "postgres"] : ["pglite"];
}

const CACHE_DIR = new URL("../../.cache/", import.meta.url);
let templatePromise: Promise<Blob> | null = null;

async function migrationsHash(): Promise<string> {
  const migrations = await readMigrations();
  const text = migrations.map((m) => `${m.version}\n${m.sql}`).join("\n");
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest).slice(0, 8), (b) => b.toString(16).padStart(2, "0"))
    .join("");
}

function pgliteTemplate(): Promise<Blob> {
  templatePromise ??= (async () => {
    const file = new URL(`pglite-template-${await migrationsHash()}.tar.gz`, CACHE_DIR);
    try {
      return new Blob([await Deno.readFile(file)]);
    } catch {
      // First run on this machine: initdb + migrations, then keep the result for later files/runs.
    }
    const db = await openDatabase({ engine: "pglite", dataDir: null });
    await migrate(db);
    const blob = await (db as Database & { dumpDataDir(): Promise<Blob> }).dumpDataDir();
    await db.close();
    await Deno.mkdir(CACHE_DIR, { recursive: true });
    const temporary = new URL(`${file.pathname}.${crypto.randomUUID()}`, file);
    await Deno.writeFile(temporary, new Uint8Array(await blob.arrayBuffer()));
    await Deno.rename(temporary, file); // atomic: parallel runs never read half a file
    return blob;
  })();
  return templatePromise;
}

export interface TestDatabase {
  readonly db: Database;
  /** The connection string of the fresh database (postgres engine only). */
  readonly url: string | null;
  close(): Promise<void>;
}

export async function openTestDatabase(engine: Engine): Promise<TestDatabase> {
  if (engine === "pglite") {
    const db = await openDatabase({
      engine: "pglite",
      dataDir: null,
      loadDataDir: await pgliteTemplate(),
    });
    return { db, url: null, close: () => db.close() };
  }
  const fresh = await createFreshPostgres(Deno.env.get("DATABASE_URL")!, {
    namePrefix: "wallet_vault_test_",
    maxConnections: 10,
    queryTimeoutMs: 10_000,
  });
  return { db: fresh.db, url: fresh.url, close: fresh.drop };
}
