import { PGlite } from "@electric-sql/pglite";
import { pgcrypto } from "@electric-sql/pglite/contrib/pgcrypto";
import type { Database, DatabaseSettings, Queryable, Row } from "./db.ts";

type PgliteSettings = Extract<DatabaseSettings, { engine: "pglite" }>;

export async function openPglite(settings: PgliteSettings): Promise<Database> {
  const pg = await PGlite.create({
    dataDir: settings.dataDir ?? undefined,
    loadDataDir: settings.loadDataDir,
    extensions: { pgcrypto },
  });
  const on = (runner: Pick<PGlite, "query" | "exec">): Queryable => ({
    async query<T extends Row>(text: string, params: readonly unknown[] = []) {
      const result = await runner.query<T>(text, params as unknown[]);
      return result.rows;
    },
    async execScript(script: string) {
      await runner.exec(script);
    },
  });
  return {
    engine: "pglite",
    ...on(pg),
    transaction: (work) => pg.transaction((tx) => work(on(tx))),
    async close() {
      await pg.close();
    },
    // Tests copy a migrated database instead of running initdb per file.
    dumpDataDir: () => pg.dumpDataDir("gzip"),
  } as Database & { dumpDataDir(): Promise<Blob> };
}
