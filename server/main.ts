/**
 * `deno task start`: the local server. With nothing configured it runs on embedded PGlite with
 * generated development keys; with APP_ENV=production it refuses to start without real ones.
 */
import { parseConfig } from "../functions/_shared/config/config.ts";
import { createServiceContext } from "../functions/_shared/context.ts";
import { openDatabase } from "./database.ts";
import { consoleLogger } from "../functions/_shared/http/log.ts";
import { atEdge, createLocalApp, LOCAL_ANON_KEY } from "./app.ts";
import {
  connectionLimitsFromEnv,
  type LimitedServer,
  serveWithLimits,
} from "./connection-limits.ts";
import { lockDataDir, secureDataDir } from "./data-dir.ts";
import { localEnv, parseOrExit, stepOrExit } from "./local-settings.ts";
import { migrate } from "./migrations.ts";
import { ensureDevelopmentCredential } from "./live-run-credentials.ts";
import { SECRET_TYPES } from "../protocol/secret-types.ts";

const HOST = "127.0.0.1";

async function main(): Promise<void> {
  let { env, devKeys } = await localEnv({ createDevKeys: true });
  const devKeysLine = devKeys &&
    `${devKeys.created ? "generated" : "using"} development keys in ${devKeys.path} ` +
      "(git-ignored, mode 0600); live-run credential: development, every type";

  // Like `supabase start`, the local server has a public key of its own for supabase-js clients.
  if (env.APP_ENV !== "production" && !env.SUPABASE_ANON_KEY && !env.SUPABASE_PUBLISHABLE_KEYS) {
    env = { ...env, SUPABASE_ANON_KEY: LOCAL_ANON_KEY };
  }

  const config = parseOrExit(() => parseConfig(env));
  const limits = parseOrExit(() => connectionLimitsFromEnv(env));

  // The embedded database's files are private to this user: set on creation, checked and fixed on
  // every start, and once more after PGlite has created its files (it makes them 0666).
  const dataDir = config.database.engine === "pglite" ? config.database.dataDir : null;
  if (dataDir) {
    await secureOrExit(dataDir);
    await stepOrExit(() => lockDataDir(dataDir));
  }
  const db = await openDatabase(config.database);
  const applied = await stepOrExit(() => migrate(db));
  // Development stays one command: the generated credential reveals every type.
  if (devKeys) await ensureDevelopmentCredential(db, devKeys.liveRunCredential, SECRET_TYPES);
  if (dataDir) await secureOrExit(dataDir);

  // Deno.serve behind a counted, deadlined socket (server/connection-limits.ts). The app is made
  // once the port is known (PORT=0 lets the system pick it): sign-in names the server's own
  // origins. No request is handled before then, as nothing is awaited in between.
  let server: LimitedServer;
  try {
    server = serveWithLimits(
      { hostname: HOST, port: config.port, limits },
      // This server is the edge: the client address is the socket's.
      atEdge((request) => app.handler(request), config.clientIp),
    );
  } catch (error) {
    if (!(error instanceof Deno.errors.AddrInUse)) throw error;
    await db.close();
    console.error(`port ${config.port} on ${HOST} is in use: stop what holds it, or set PORT`);
    Deno.exit(1);
  }
  const port = server.addr.port;
  const ownOrigins = [`http://${HOST}:${port}`, `http://localhost:${port}`];
  const app = createLocalApp(createServiceContext(config, db, consoleLogger, { ownOrigins }));

  console.log(`wallet-vault listening on http://${HOST}:${port} (${config.appEnv})`);
  console.log(
    config.database.engine === "pglite"
      ? `database: embedded PGlite in ${config.database.dataDir ?? "memory"}`
      : `database: PostgreSQL at ${redactUrl(config.database.url)}`,
  );
  if (devKeysLine) console.log(devKeysLine);
  console.log(
    `migrations: ${applied.length === 0 ? "up to date" : `applied ${applied.join(", ")}`}`,
  );
  if (config.publicApiKeys.length > 0) {
    console.log(`anon key: ${config.publicApiKeys[0]} (public; for supabase-js createClient)`);
  }
  console.log(
    `limits: request head ${limits.headerTimeoutMs} ms, body ${limits.bodyTimeoutMs} ms, ` +
      `${limits.maxConnections} connections`,
  );
  console.log(`try: curl http://${HOST}:${port}/api/secrets`);
  console.log(`settings page: http://${HOST}:${port}/settings`);

  // Once, however many signals come (`deno task` passes one on to its child as well).
  let stopping: Promise<void> | null = null;
  const stop = () => {
    stopping ??= (async () => {
      await server.shutdown();
      await db.close();
      Deno.exit(0);
    })();
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}

async function secureOrExit(dataDir: string): Promise<void> {
  try {
    await secureDataDir(dataDir);
  } catch (error) {
    console.error((error as Error).message);
    Deno.exit(1);
  }
}

function redactUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = "***";
  return parsed.toString();
}

await main();
