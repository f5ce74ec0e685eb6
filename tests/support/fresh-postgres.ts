/**
 * A new, migrated database on a real PostgreSQL server, for one test file or one bench run to have
 * to itself: no rows from another run are in it, and `drop()` removes it again.
 */
import postgres from "postgres";
import type { Database } from "../../functions/_shared/db/db.ts";
import { openDatabase } from "../../server/database.ts";
import { migrate } from "../../server/migrations.ts";

export interface FreshPostgres {
  readonly db: Database;
  /** The connection string of the new database. */
  readonly url: string;
  /** Closes `db` and drops the database. */
  drop(): Promise<void>;
}

export interface FreshPostgresOptions {
  /** The start of the database's name; a random suffix keeps parallel runs apart. */
  readonly namePrefix: string;
  readonly maxConnections: number;
  readonly queryTimeoutMs: number;
}

/** Creates the database on `adminUrl`'s server; one whose migrations fail is dropped, not left. */
export async function createFreshPostgres(
  adminUrl: string,
  { namePrefix, maxConnections, queryTimeoutMs }: FreshPostgresOptions,
): Promise<FreshPostgres> {
  const name = `${namePrefix}${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const db = await openDatabase({
    engine: "postgres",
    url: url.toString(),
    maxConnections,
    prepare: true,
    queryTimeoutMs,
  });
  async function drop() {
    // Each step runs even when the one before failed, so a failed close leaves no database behind.
    // `with (force)`: a connection something left open cannot keep the database alive.
    try {
      await db.close();
    } finally {
      try {
        await admin.unsafe(`drop database if exists ${name} with (force)`);
      } finally {
        await admin.end();
      }
    }
  }
  try {
    await migrate(db);
  } catch (error) {
    await drop();
    throw error;
  }
  return { db, url: url.toString(), drop };
}
