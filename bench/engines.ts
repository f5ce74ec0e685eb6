/**
 * What the bench runs on: the local server on PostgreSQL and on PGlite, and the deployed shape (the
 * `api` function as Supabase hosts it: its own process with --allow-net --allow-env only, through
 * PgBouncer in transaction mode, as a login role that is no superuser). Each engine's floor server
 * runs on the same database, reached the way its service is.
 */
import postgres from "postgres";
import { openDatabase } from "../server/database.ts";
import { migrate } from "../server/migrations.ts";
import { startEdgeShape } from "../tests/support/edge.ts";
import { findPgBouncer, startPgBouncer } from "../tests/support/pgbouncer.ts";
import type { BenchDatabase, ServerProcess } from "./support.ts";
import { createDatabase, findPostgres, jsonHeaders, startProcess } from "./support.ts";

export interface Engine {
  readonly name: string;
  /** Held to bench/targets.ts; PGlite is reported, not targeted. */
  readonly targeted: boolean;
  /** One process at a time per database (PGlite's data directory). */
  readonly exclusive: boolean;
  createDatabase(): Promise<BenchDatabase>;
  startServer(db: BenchDatabase, keys: Record<string, string>): Promise<ServerProcess>;
  startFloor(db: BenchDatabase, keys: Record<string, string>): Promise<ServerProcess>;
}

export const ENGINE_NAMES = ["postgres", "pglite", "deployed"];
const POSTGRES = "postgres:public.user_secrets";

function localEngine(storage: string, adminUrl: string | null): Engine {
  return {
    name: storage.split(":")[0],
    targeted: adminUrl !== null,
    exclusive: adminUrl === null,
    createDatabase: () => createDatabase(adminUrl),
    startServer: (db, keys) => startProcess("server/main.ts", { ...keys, ...db.env }, storage),
    startFloor: (db, keys) =>
      startProcess(
        "bench/floor-server.ts",
        { ...keys, ...db.env, BENCH_FLOOR_AT_EDGE: "1" },
        storage,
        "/ready",
      ),
  };
}

// The roles Supabase has before any migration; the migrations grant to them.
const ROLES = `do $$ declare r text; begin
  foreach r in array array['anon', 'authenticated', 'service_role'] loop
    if not exists (select from pg_roles where rolname = r) then execute format(
      'create role %I nologin noinherit %s', r, case when r = 'service_role' then 'bypassrls' end);
    end if; end loop;
exception when duplicate_object or unique_violation then null; end $$`;

/** A database owned by a new login role with Supabase's `postgres` rights: no superuser, BYPASSRLS. */
async function deployedDatabase(adminUrl: string): Promise<BenchDatabase> {
  const lookup = await findPgBouncer(false);
  if (!("found" in lookup)) throw new Error(lookup.missing);
  const name = `wallet_vault_bench_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  const superUrl = Object.assign(new URL(adminUrl), { pathname: `/${name}` });
  const ownerUrl = Object.assign(new URL(superUrl), { username: name, password: "" }).toString();
  await admin.unsafe(ROLES);
  await admin.unsafe(`create role ${name} login nosuperuser nocreatedb nocreaterole bypassrls`);
  await admin.unsafe(`grant anon, authenticated, service_role to ${name}`);
  await admin.unsafe(`create database ${name} owner ${name}`);
  const drop = async () => {
    await admin.unsafe(`drop database if exists ${name} with (force)`).catch(() => {});
    await admin.unsafe(`drop role if exists ${name}`).catch(() => {});
    await admin.end();
  };
  try {
    const settings = { maxConnections: 1, prepare: true, queryTimeoutMs: 600_000 };
    const db = await openDatabase({ engine: "postgres", url: ownerUrl, ...settings });
    await migrate(db).finally(() => db.close());
    const pooler = await startPgBouncer(lookup.found, { poolSize: 6, upstreamUrl: ownerUrl });
    return {
      env: { DATABASE_URL: pooler.urlFor(name), DATABASE_MAX_CONNECTIONS: "8" },
      url: ownerUrl,
      async sql(script) {
        // Seeding turns triggers off and checkpoints: the superuser's work, not the service's.
        const sql = postgres(superUrl.toString(), { max: 1, onnotice: () => {} });
        await sql.unsafe(script).finally(() => sql.end());
      },
      drop: () => pooler.stop().finally(drop),
    };
  } catch (error) {
    await drop();
    throw error;
  }
}

/** The environment Supabase gives a function here, beside the bench's keys. */
export function functionEnv(db: BenchDatabase, keys: Record<string, string>) {
  return {
    ...keys,
    ...db.env,
    // A local stack's, as `supabase functions serve` gives: development keys refuse a hosted URL.
    SUPABASE_URL: "http://kong:8000",
    // Supabase gives the direct URL too; the function must prefer DATABASE_URL, the pooler's.
    SUPABASE_DB_URL: db.url!,
    ALLOWED_ORIGINS: "http://127.0.0.1:54321",
  };
}

function deployedEngine(adminUrl: string): Engine {
  return {
    name: "deployed",
    targeted: true,
    exclusive: false,
    createDatabase: () => deployedDatabase(adminUrl),
    async startServer(db, keys) {
      const env = functionEnv(db, keys);
      const edge = await startEdgeShape({ env, functions: ["api"], instancesPerFunction: 1 });
      const url = `http://127.0.0.1:${edge.instances.api[0]}`;
      const server = { url, env, pids: edge.pids, stop: () => edge.stop() };
      await assertDeployedShape(server, db, adminUrl).catch(async (error) => {
        await server.stop();
        throw error;
      });
      return server;
    },
    startFloor: (db, keys) =>
      startProcess("bench/floor-server.ts", { ...keys, ...db.env }, POSTGRES, "/ready"),
  };
}

/**
 * Throws unless the function runs on Postgres and, after a write, its sockets go to the pooler
 * and none straight to Postgres, and every connection to its database is the non-superuser's.
 */
async function assertDeployedShape(server: ServerProcess, db: BenchDatabase, adminUrl: string) {
  const storage = (await (await fetch(`${server.url}/api/secrets`)).json()).storage;
  if (storage !== POSTGRES) throw new Error(`the deployed function runs on ${storage}`);
  const init = { method: "POST", headers: jsonHeaders, body: "{}" };
  const nonce = await fetch(`${server.url}/api/auth/nonce`, init);
  await nonce.body?.cancel();
  if (nonce.status !== 200) throw new Error(`the deployed nonce failed (${nonce.status})`);
  const ss = new Deno.Command("ss", { args: ["-tnpH", "state", "established"], stdout: "piped" });
  const ports = peerPorts(new TextDecoder().decode((await ss.output()).stdout), server.pids);
  const port = (url: string) => Number(new URL(url).port || 5432);
  const problem = poolerProblem(ports, port(db.env.DATABASE_URL), port(db.url!));
  if (problem !== null) throw new Error(`the deployed function ${problem}`);
  const name = new URL(db.url!).pathname.slice(1);
  const sql = postgres(adminUrl, { max: 1, onnotice: () => {} });
  const roles = await sql`select distinct a.usename, r.rolsuper from pg_stat_activity a
    join pg_roles r on r.rolname = a.usename where a.datname = ${name}`.finally(() => sql.end());
  if (roles.length !== 1 || roles[0].usename !== name || roles[0].rolsuper) {
    throw new Error(`the deployed database is reached as ${JSON.stringify(roles)}, not ${name}`);
  }
}

/** `ss -tnpH state established` as the peer ports the sockets of `pids` are connected to. */
export function peerPorts(ssOutput: string, pids: readonly number[]): number[] {
  return ssOutput.split("\n").flatMap((line) => {
    const fields = line.trim().split(/\s+/);
    const users = fields.findIndex((field) => field.startsWith("users:"));
    const owners = [...fields.slice(users).join(" ").matchAll(/pid=(\d+)/g)].map((m) =>
      Number(m[1])
    );
    if (users < 1 || !owners.some((pid) => pids.includes(pid))) return [];
    return [Number(fields[users - 1].split(":").at(-1))];
  });
}

/** What is wrong with where a deployed function's connections go, or null. */
export function poolerProblem(ports: readonly number[], pooler: number, database: number) {
  if (pooler === database) return `is given no pooler (the database is on ${database})`;
  if (ports.includes(database)) return `connects straight to the database (port ${database})`;
  if (!ports.includes(pooler)) return `holds no connection to the pooler (port ${pooler})`;
  return null;
}

/** The engines asked for (BENCH_ENGINES) that can run here, and why any other is skipped. */
export async function engines(wanted: readonly string[]) {
  const found = await findPostgres();
  const adminUrl = found?.url ?? null;
  const pgbouncer = await findPgBouncer(false);
  const available: Engine[] = [];
  const skipped: string[] = [];
  for (const name of wanted) {
    if (name === "pglite") available.push(localEngine("pglite:public.user_secrets", null));
    else if (adminUrl === null) skipped.push(`${name}: no DATABASE_URL, nothing on port 5432`);
    else if (name === "postgres") available.push(localEngine(POSTGRES, adminUrl));
    else if ("missing" in pgbouncer) skipped.push(`deployed: ${pgbouncer.missing}`);
    else available.push(deployedEngine(adminUrl));
  }
  const used = available.some((engine) => engine.name !== "pglite");
  return { available, skipped, postgresVersion: used ? found!.version : null };
}
