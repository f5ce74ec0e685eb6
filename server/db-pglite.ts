import { PGlite } from "@electric-sql/pglite";
import { pgcrypto } from "@electric-sql/pglite/contrib/pgcrypto";
import type {
  Database,
  DatabaseSettings,
  Queryable,
  Row,
  Statement,
} from "../functions/_shared/db/db.ts";
import { realDataDir } from "./data-dir.ts";

type PgliteSettings = Extract<DatabaseSettings, { engine: "pglite" }>;

export async function openPglite(settings: PgliteSettings): Promise<Database> {
  const pg = await PGlite.create({
    // PGlite cannot open its files through a symbolic link: the directory's own path.
    dataDir: settings.dataDir === null ? undefined : await realDataDir(settings.dataDir),
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
  const queryable = on(pg);
  return {
    engine: "pglite",
    ...queryable,
    transaction: (work) => pg.transaction((tx) => work(on(tx))),
    // In-process, with nothing to overlap: the statement commits on its own, then `use` runs.
    async queryOverlappingCommit<T extends Row, R>(
      { text, params = [] }: Statement,
      use: (rows: T[]) => R | Promise<R>,
    ) {
      return await use(await queryable.query<T>(text, params));
    },
    async batch(statements: readonly Statement[]) {
      // In-process, so nothing to pipeline: the statements run one after another.
      const outcomes: PromiseSettledResult<Row[]>[] = [];
      const rolledBack = new Error("a statement failed");
      try {
        await pg.transaction(async (tx) => {
          for (const { text, params = [] } of statements) {
            try {
              outcomes.push({
                status: "fulfilled",
                value: (await tx.query<Row>(text, [...params])).rows,
              });
            } catch (reason) {
              outcomes.push({ status: "rejected", reason });
            }
          }
          if (outcomes.some((outcome) => outcome.status === "rejected")) throw rolledBack;
        });
      } catch (error) {
        if (error !== rolledBack) throw error;
      }
      return outcomes;
    },
    async close() {
      await pg.close();
    },
    // Tests copy a migrated database instead of running initdb per file.
    dumpDataDir: () => pg.dumpDataDir("gzip"),
  } as Database & { dumpDataDir(): Promise<Blob> };
}
