/**
 * The local app on a database the caller opened (a throwaway cluster, a bench database), with the
 * same configuration path the server takes: `parseConfig` of an environment, then the context.
 * `startTestApp` opens its own test database; this is for tests that own the database's life.
 */
import { parseConfig } from "../../functions/_shared/config.ts";
import { createServiceContext } from "../../functions/_shared/context.ts";
import type { Database } from "../../functions/_shared/db.ts";
import { silentLogger } from "../../functions/_shared/log.ts";
import { createLocalApp } from "../../server/app.ts";
import { TEST_ORIGIN, type TestApp, testEnv } from "./app.ts";

export function appOn(
  db: Database,
  env: Record<string, string> = {},
  url: string | null = null,
): TestApp {
  const config = parseConfig(testEnv(env));
  const context = createServiceContext(config, db, silentLogger, { ownOrigins: [TEST_ORIGIN] });
  const app = createLocalApp(context);
  return {
    engine: db.engine,
    config,
    context,
    app,
    database: { db, url, close: () => db.close() },
    fetch(path, init = {}) {
      const request = new Request(new URL(path, TEST_ORIGIN), init);
      if (!request.headers.has("x-forwarded-for")) {
        request.headers.set("x-forwarded-for", "127.0.0.1");
      }
      return app.handler(request);
    },
    close: () => db.close(),
  };
}
