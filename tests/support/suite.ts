/**
 * `describeWithDatabase` registers one Deno test per engine (PGlite always, real Postgres when
 * DATABASE_URL is set). Each test shares one database and app across its steps, one step per
 * behaviour, so PGlite boots once per file and engine rather than once per behaviour.
 */
import { startTestApp, type TestApp } from "./app.ts";
import { testEngines } from "./database.ts";

export type Behaviour = (app: TestApp) => Promise<void>;

export function describeWithDatabase(
  title: string,
  behaviours: Readonly<Record<string, Behaviour>>,
  env: Record<string, string> = {},
): void {
  for (const engine of testEngines()) {
    Deno.test({
      name: `${title} [${engine}]`,
      // PGlite and postgres.js keep timers and sockets open between steps by design.
      sanitizeOps: false,
      sanitizeResources: false,
      async fn(t) {
        const app = await startTestApp(engine, env);
        try {
          for (const [name, behaviour] of Object.entries(behaviours)) {
            await t.step(name, () => behaviour(app));
          }
        } finally {
          await app.close();
        }
      },
    });
  }
}
