import postgres from "postgres";
import type { Database, DatabaseSettings, Queryable, Row } from "./db.ts";

type PostgresSettings = Extract<DatabaseSettings, { engine: "postgres" }>;

export function openPostgres(settings: PostgresSettings): Database {
  const sql = postgres(settings.url, {
    max: settings.maxConnections,
    // Supabase's transaction pooler cannot keep prepared statements; DATABASE_PREPARE=false.
    prepare: settings.prepare,
    connect_timeout: Math.max(1, Math.ceil(settings.queryTimeoutMs / 1000)),
    idle_timeout: 30,
    onnotice: () => {},
    connection: {
      application_name: "wallet-vault",
      statement_timeout: settings.queryTimeoutMs,
    },
  });
  const on = (runner: postgres.Sql | postgres.TransactionSql): Queryable => ({
    async query<T extends Row>(text: string, params: readonly unknown[] = []) {
      const rows = await runner.unsafe(text, params as postgres.ParameterOrJSON<never>[]);
      // A plain array, the same shape PGlite returns (postgres.js hands back an Array subclass).
      return Array.from(rows) as unknown as T[];
    },
    async execScript(script: string) {
      await runner.unsafe(script);
    },
  });
  return {
    engine: "postgres",
    ...on(sql),
    async transaction(work) {
      return (await sql.begin((tx) => work(on(tx)))) as Awaited<ReturnType<typeof work>>;
    },
    async close() {
      await sql.end({ timeout: 5 });
    },
  };
}
