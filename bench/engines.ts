/**
 * What the bench runs on: each engine's databases, its server and its floor server (ENGINES).
 */
import { type FloorWay, wayLabel } from "./floor-way.ts";
import { assertStorage, connectedPorts, type ServerProcess, startProcess } from "./processes.ts";
import { type BenchDatabase, createDatabase, findPostgres } from "./support.ts";
import { startEdgeShape } from "../tests/support/edge.ts";
import { findPgBouncer, startPgBouncer } from "../tests/support/pgbouncer.ts";

// Engines: to add one (the deployed shape: functions as their own processes behind a pooler),
// add an entry to ENGINES; everything bench/run.ts measures runs per entry.

export interface BenchEngine {
  readonly name: string;
  /** The `storage` its servers must report (GET /api/secrets; the floor's GET /ready). */
  readonly storage: string;
  /** Held to bench/targets.ts (PGlite is reported, not targeted). */
  readonly targeted: boolean;
  /** One process at a time per database (PGlite's data directory). */
  readonly exclusive: boolean;
  /** null when it can run here, else why it is skipped. */
  available(): Promise<string | null>;
  /** A new, migrated database holding nothing from an earlier run. */
  createDatabase(): Promise<BenchDatabase>;
  /** The service under test; `keys` are the keys and limits every process of a run shares. */
  startServer(db: BenchDatabase, keys: Record<string, string>): Promise<ServerProcess>;
  /**
   * How its floors are reached (bench/floor-way.ts): first the way its server is, the floor its
   * targets are held to; then any other way measured beside it (the floor as it was before).
   */
  readonly floorWays: readonly [FloorWay] | readonly [FloorWay, FloorWay];
  /** The floor server (bench/bare-server.ts): the same driver and settings as the service. */
  startFloor(
    db: BenchDatabase,
    keys: Record<string, string>,
    way: FloorWay,
  ): Promise<ServerProcess>;
  /**
   * The environment of one function started alone (cold start); `serverUrl` is for the proxy.
   * null: the functions do not run on this engine (PGlite belongs to the local server alone).
   */
  functionEnv(
    db: BenchDatabase,
    keys: Record<string, string>,
    serverUrl: string,
  ): Record<string, string> | null;
}

let postgresAdminUrl: string | null = null;

/** The Postgres server the engines make their databases on, once an engine has found one. */
export function postgresAdmin(): string | null {
  return postgresAdminUrl;
}

/** bench/bare-server.ts on the engine's database, reached `way`: every engine's floor. */
function startBareFloor(
  db: BenchDatabase,
  keys: Record<string, string>,
  way: FloorWay,
): Promise<ServerProcess> {
  return startProcess(
    "bench/bare-server.ts",
    { ...keys, ...db.env, BENCH_FLOOR_WAY: way },
    "/ready",
  );
}

/** The local server (server/main.ts) and the floor, on one database given by `db.env`. */
function localEngine(
  name: string,
  options: Pick<BenchEngine, "storage" | "targeted" | "exclusive" | "available">,
  create: () => Promise<BenchDatabase>,
): BenchEngine {
  return {
    name,
    ...options,
    createDatabase: create,
    startServer: (db, keys) => startProcess("server/main.ts", { ...keys, ...db.env }),
    // The server answers through its connection guard, so the floor its targets use does too; the
    // floor without it (the yardstick until 2026-11-25) is measured beside it.
    floorWays: ["guarded", "direct"],
    startFloor: startBareFloor,
    functionEnv: (db, keys) =>
      db.engine === "pglite" ? null : {
        ...keys,
        ...db.env,
        ALLOWED_ORIGINS: "http://127.0.0.1:54321",
      },
  };
}

/**
 * The deployed shape (issue 12): the `api` function as its own process with the edge runtime's
 * permissions only (`--allow-net --allow-env`, tests/support/edge.ts), on Postgres through
 * PgBouncer in transaction mode (checked: its connections go to the pooler, none straight to the
 * database); its floor is the bare server through the same pooler, with the same driver settings
 * (a pooler URL: no prepared statements). Supabase's own gateway is not here.
 */
function deployedEngine(): BenchEngine {
  return {
    name: "deployed",
    storage: "postgres:public.user_secrets",
    targeted: true,
    exclusive: false,
    async available() {
      postgresAdminUrl ??= await findPostgres();
      if (postgresAdminUrl === null) return "no Postgres to put a pooler in front of";
      const lookup = await findPgBouncer(false);
      return "missing" in lookup ? lookup.missing : null;
    },
    async createDatabase() {
      const direct = await createDatabase("postgres", postgresAdminUrl);
      const lookup = await findPgBouncer(false);
      if (!("found" in lookup)) throw new Error(lookup.missing);
      const pooler = await startPgBouncer(lookup.found, {
        poolSize: DEPLOYED_POOL_SIZE,
        upstreamUrl: postgresAdminUrl!,
      });
      const name = new URL(direct.url!).pathname.slice(1);
      const pooled: BenchDatabase = {
        ...direct,
        env: { DATABASE_URL: pooler.urlFor(name), DATABASE_MAX_CONNECTIONS: "8" },
        async drop() {
          await pooler.stop();
          await direct.drop();
        },
      };
      return pooled;
    },
    async startServer(db, keys) {
      const env = {
        ...keys,
        ...db.env,
        // A local stack's, as `supabase functions serve` gives: development (the bench's keys)
        // refuses a hosted project's URL.
        SUPABASE_URL: "http://kong:8000",
        // Supabase gives every function the direct URL too; it must prefer DATABASE_URL, the
        // pooler, which assertThroughPooler checks.
        SUPABASE_DB_URL: db.url!,
        ALLOWED_ORIGINS: "http://127.0.0.1:54321",
      };
      const edge = await startEdgeShape({
        env,
        functions: ["api"],
        instancesPerFunction: 1,
      });
      const url = `http://127.0.0.1:${edge.instances.api[0]}`;
      const server = { url, env, pid: edge.pids[0], pids: edge.pids, stop: () => edge.stop() };
      try {
        await assertStorage("the deployed api function", url, "postgres:public.user_secrets");
        await assertThroughPooler("the deployed api function", server, db);
      } catch (error) {
        await server.stop();
        throw error;
      }
      return server;
    },
    floorWays: ["direct"],
    startFloor: startBareFloor,
    functionEnv: (db, keys) => ({ ...keys, ...db.env, ALLOWED_ORIGINS: "http://127.0.0.1:54321" }),
  };
}

/**
 * Throws unless `server` reaches the database through the pooler alone. The storage it reports
 * names the engine, not the way to it, so after one request that writes (a nonce: the function
 * opens a connection, kept 30 s when idle) its sockets are listed: one at least must go to the
 * pooler's port (DATABASE_URL) and none to the database server's (the direct URL).
 */
async function assertThroughPooler(what: string, server: ServerProcess, db: BenchDatabase) {
  const nonce = await fetch(`${server.url}/api/auth/nonce`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{}",
  });
  await nonce.body?.cancel();
  if (nonce.status !== 200) throw new Error(`${what}: a nonce failed (${nonce.status})`);
  const ports = await connectedPorts(server.pids ?? [server.pid]);
  if (ports === null) {
    throw new Error(`${what}: cannot tell which way it reaches the database (ss did not run)`);
  }
  const problem = poolerProblem(ports, portOf(db.env.DATABASE_URL), portOf(db.url!));
  if (problem !== null) throw new Error(`${what} ${problem}`);
}

/** A Postgres URL's port; NaN without one. */
const portOf = (url: string | undefined) =>
  url === undefined ? NaN : Number(new URL(url).port || 5432);

/** What is wrong with where a deployed process's connections go (by process), or null. */
export function poolerProblem(
  ports: ReadonlyMap<number, readonly number[]>,
  poolerPort: number,
  databasePort: number,
): string | null {
  const all = [...ports.values()].flat();
  if (Number.isNaN(poolerPort) || poolerPort === databasePort) {
    return `is given no pooler to connect through (the database is on port ${databasePort})`;
  }
  if (all.includes(databasePort)) {
    return `connects straight to the database (port ${databasePort}), not through the pooler (port ${poolerPort})`;
  }
  if (!all.includes(poolerPort)) return `holds no connection to the pooler (port ${poolerPort})`;
  return null;
}

/** PgBouncer's server connections per database in the deployed shape: fewer than the clients. */
const DEPLOYED_POOL_SIZE = 6;

export const ENGINES: readonly BenchEngine[] = [
  localEngine(
    "postgres",
    {
      storage: "postgres:public.user_secrets",
      targeted: true,
      exclusive: false,
      async available() {
        postgresAdminUrl = await findPostgres();
        return postgresAdminUrl === null
          ? "no DATABASE_URL and nothing answers on 127.0.0.1:5432"
          : null;
      },
    },
    () => createDatabase("postgres", postgresAdminUrl),
  ),
  localEngine(
    "pglite",
    {
      storage: "pglite:public.user_secrets",
      targeted: false,
      exclusive: true,
      available: () => Promise.resolve(null),
    },
    () => createDatabase("pglite", null),
  ),
  deployedEngine(),
];

/** The engine's server, checked to run on the engine's storage before anything is measured. */
export async function startChecked(
  engine: BenchEngine,
  db: BenchDatabase,
  keys: Record<string, string>,
) {
  const server = await engine.startServer(db, keys);
  try {
    await assertStorage(`the ${engine.name} server`, server.url, engine.storage);
  } catch (error) {
    await server.stop();
    throw error;
  }
  return server;
}

/** A floor server, and how it is reached. */
export type FloorProcess = ServerProcess & { readonly way: FloorWay };

/**
 * The engine's floor server reached `way`, checked to run on the engine's storage and to be
 * reached that way (as its /ready reports) before anything is measured against it.
 */
export async function startCheckedFloor(
  engine: BenchEngine,
  db: BenchDatabase,
  keys: Record<string, string>,
  way: FloorWay,
): Promise<FloorProcess> {
  const floor = await engine.startFloor(db, keys, way);
  try {
    const what = `the ${engine.name} floor${wayLabel(way)}`;
    const ready = await assertStorage(what, floor.url, engine.storage, "/ready");
    if (ready.way !== way) {
      throw new Error(`${what} is reached ${JSON.stringify(ready.way)}, not ${way}`);
    }
  } catch (error) {
    await floor.stop();
    throw error;
  }
  return { ...floor, way };
}
