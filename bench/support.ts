/**
 * What the bench and the load test share: a fresh database per engine (a new database on the
 * real server, a new data directory for PGlite), the local server (server/main.ts) as its own
 * process on a free loopback port, and an HTTP client that signs in with real wallet signatures.
 */
import postgres from "postgres";
import { type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { generatePrivateKey } from "viem/accounts";
import { openDatabase } from "../server/database.ts";
import { generateDevKeys } from "../server/dev-keys.ts";
import { migrate } from "../scripts/lib/migrations.ts";

export type Engine = "postgres" | "pglite";

const ROOT = new URL("../", import.meta.url);
export const DEFAULT_POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/postgres";

export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** DATABASE_URL, else a local server on 5432 if one answers; null when there is none. */
export async function findPostgres(): Promise<string | null> {
  const url = Deno.env.get("DATABASE_URL") || DEFAULT_POSTGRES_URL;
  const sql = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} });
  try {
    await sql`select 1`;
    return url;
  } catch {
    return null;
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

export interface BenchDatabase {
  readonly engine: Engine;
  /** DATABASE_URL or PGLITE_DATA_DIR for the server process. */
  readonly env: Record<string, string>;
  readonly url: string | null;
  readonly dataDir: string | null;
  /** Runs SQL directly (PGlite: only while no server process holds the directory). */
  sql(script: string): Promise<void>;
  drop(): Promise<void>;
}

/** A new, migrated database: nothing from an earlier run is in it. */
export async function createDatabase(
  engine: Engine,
  adminUrl: string | null,
): Promise<BenchDatabase> {
  if (engine === "pglite") {
    const dataDir = await Deno.makeTempDir({ prefix: "wallet-vault-bench-pglite-" });
    const db = await openDatabase({ engine: "pglite", dataDir });
    await migrate(db);
    await db.close();
    return {
      engine,
      env: { PGLITE_DATA_DIR: dataDir },
      url: null,
      dataDir,
      async sql(script) {
        const db = await openDatabase({ engine: "pglite", dataDir });
        try {
          await db.execScript(script);
        } finally {
          await db.close();
        }
      },
      drop: () => Deno.remove(dataDir, { recursive: true }).catch(() => {}),
    };
  }
  const name = `wallet_vault_bench_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  const admin = postgres(adminUrl!, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  const url = new URL(adminUrl!);
  url.pathname = `/${name}`;
  const db = await openDatabase({
    engine: "postgres",
    url: url.toString(),
    maxConnections: 2,
    prepare: true,
    queryTimeoutMs: 600_000,
  });
  await migrate(db);
  return {
    engine,
    env: { DATABASE_URL: url.toString() },
    url: url.toString(),
    dataDir: null,
    sql: (script) => db.execScript(script),
    async drop() {
      await db.close().catch(() => {});
      await admin.unsafe(`drop database if exists ${name} with (force)`).catch(() => {});
      await admin.end({ timeout: 1 }).catch(() => {});
    },
  };
}

/**
 * Adds creators `from`..`to` in bulk (generate_series): each with a wallet, a live session and all
 * seven secrets (random ciphertext: these rows are only ever listed, never revealed). Triggers are
 * off while seeding, so the audit trail is not part of the bulk insert.
 */
export function seedCreatorsSql(from: number, to: number): string {
  const id = `('00000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid`;
  return `
    set session_replication_role = replica;
    set statement_timeout = 0;
    insert into public.wallet_users (id, wallet_address)
      select ${id}, '0x' || lpad(to_hex(g), 40, '0') from generate_series(${from}, ${to}) g;
    insert into public.auth_sessions (user_id, expires_at)
      select ${id}, now() + interval '1 day' from generate_series(${from}, ${to}) g;
    insert into public.user_secrets (user_id, secret_type, ciphertext, iv, key_id, hint)
      select ${id}, t, gen_random_bytes(48), gen_random_bytes(12), 'k1', '…abcd'
        from generate_series(${from}, ${to}) g,
             unnest(array['provider_a_api_key', 'provider_a_org_id', 'provider_b_key',
               'provider_c_key', 'provider_d_key', 'provider_e_key', 'provider_f_api_key']) t;
    set session_replication_role = origin;
    analyze;
    -- Written out now, so the bulk load's dirty pages do not land in the next measurement.
    checkpoint;`;
}

// ---------------------------------------------------------------------------------------------
// The local server as a process

/** Keys and limits for a benchmark server: fresh keys, rate limits out of the way. */
export function serverEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    APP_ENV: "development",
    PROJECT_NAME: "wallet-vault-bench",
    ...generateDevKeys(),
    RATE_LIMIT_NONCE_PER_MINUTE: "1000000",
    RATE_LIMIT_PROOF_PER_MINUTE: "1000000",
    RATE_LIMIT_PROOF_PER_ADDRESS_PER_MINUTE: "1000000",
    RATE_LIMIT_VAULT_WRITES_PER_MINUTE: "1000000",
    RATE_LIMIT_REVEALS_PER_MINUTE: "1000000",
    RATE_LIMIT_REVEALS_PER_TOKEN_PER_MINUTE: "1000000",
    ...extra,
  };
}

export interface ServerProcess {
  readonly url: string;
  readonly env: Record<string, string>;
  readonly pid: number;
  /** Every process that serves a request, when there is more than `pid` (CPU is summed over them). */
  readonly pids?: readonly number[];
  stop(): Promise<void>;
}

const DENO_PERMISSIONS = [
  "--allow-net",
  "--allow-env",
  "--allow-read",
  "--allow-write",
  "--allow-sys",
];

/**
 * The only variables a child process inherits from ours: what Deno needs to run and find its
 * caches. Everything else a server, floor or function sees is passed explicitly, so a setting of
 * the parent (DATABASE_URL above all: config.ts prefers it to PGlite) cannot change which engine a
 * row measures.
 */
export const INHERITED_ENV = [
  "PATH",
  "HOME",
  "TMPDIR",
  "LANG",
  "TZ",
  "NO_COLOR",
  "DENO_DIR",
  "DENO_NO_UPDATE_CHECK",
  "DENO_CERT",
  "XDG_CACHE_HOME",
  "NPM_CONFIG_REGISTRY",
  "SSL_CERT_FILE",
];

/** `env` plus the inherited basics above, and nothing else: pass it with `clearEnv: true`. */
export function childEnv(env: Record<string, string>): Record<string, string> {
  const base: Record<string, string> = {};
  for (const name of INHERITED_ENV) {
    const value = Deno.env.get(name);
    if (value !== undefined) base[name] = value;
  }
  return { ...base, ...env };
}

/**
 * Starts `script` with exactly `env` (PORT set here; see childEnv) and waits until `readyPath`
 * answers 200. `denoFlags` go before the script (e.g. --inspect for bench/cpu-profile.ts).
 */
export async function startProcess(
  script: string,
  env: Record<string, string>,
  readyPath = "/api/secrets",
  denoFlags: readonly string[] = [],
): Promise<ServerProcess> {
  const port = freePort();
  const fullEnv = { ...env, PORT: String(port) };
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...DENO_PERMISSIONS, ...denoFlags, new URL(script, ROOT).pathname],
    env: childEnv(fullEnv),
    clearEnv: true,
    cwd: new URL(".", ROOT).pathname,
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const stderr: string[] = [];
  const drain = (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      stderr.push(chunk);
    }
  })();
  const url = `http://127.0.0.1:${port}`;
  const exit: { status?: Deno.CommandStatus } = {};
  child.status.then((status) => exit.status = status);
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const response = await fetch(`${url}${readyPath}`);
      await response.body?.cancel();
      if (response.status === 200) break;
    } catch {
      // not listening yet
    }
    if (exit.status !== undefined || Date.now() > deadline) {
      if (exit.status === undefined) child.kill("SIGKILL");
      await drain.catch(() => {});
      const why = exit.status === undefined
        ? "no answer within 60 s"
        : `exited with ${exit.status.code}`;
      throw new Error(`${script} did not start (${why}): ${stderr.join("").slice(-2000)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url,
    env: fullEnv,
    pid: child.pid,
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch {
        // already gone
      }
      const timer = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch {
          // already gone
        }
      }, 10_000);
      await child.status;
      clearTimeout(timer);
      await drain.catch(() => {});
    },
  };
}

export function startServer(env: Record<string, string>): Promise<ServerProcess> {
  return startProcess("server/main.ts", env);
}

/** The `storage` a running server reports (GET /api/secrets), e.g. `postgres:public.user_secrets`. */
export async function reportedStorage(url: string, path = "/api/secrets"): Promise<string> {
  const response = await fetch(`${url}${path}`);
  const body = await response.json().catch(() => null) as { storage?: unknown } | null;
  if (response.status !== 200 || typeof body?.storage !== "string") {
    throw new Error(`${url}${path} did not report its storage (status ${response.status})`);
  }
  return body.storage;
}

/**
 * Throws unless the process at `url` runs on `expected` storage: a row must measure the engine
 * its label names (a server that silently fell back to another database would not).
 */
export async function assertStorage(
  what: string,
  url: string,
  expected: string,
  path = "/api/secrets",
): Promise<void> {
  const storage = await reportedStorage(url, path);
  if (storage !== expected) {
    throw new Error(
      `${what} runs on ${storage}, not ${expected}: its environment is not the one meant for it`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// A client of the HTTP API

export interface Session {
  readonly account: PrivateKeyAccount;
  readonly accessToken: string;
  readonly refreshToken: string;
  readonly userId: string;
}

export function newAccount(): PrivateKeyAccount {
  return privateKeyToAccount(generatePrivateKey());
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

/** A nonce and its message, signed by `account`: a proof ready to exchange. */
export async function preparedProof(
  baseUrl: string,
  account: PrivateKeyAccount,
): Promise<{ message: string; signature: string }> {
  const nonce = await post(`${baseUrl}/api/auth/nonce`, { address: account.address });
  if (nonce.status !== 200) throw new Error(`nonce: ${JSON.stringify(nonce.body)}`);
  const message = nonce.body.message as string;
  return { message, signature: await account.signMessage({ message }) };
}

export async function signIn(baseUrl: string, account = newAccount()): Promise<Session> {
  const proof = await preparedProof(baseUrl, account);
  const response = await post(`${baseUrl}/api/auth/wallet-proof`, proof);
  if (response.status !== 200) throw new Error(`wallet-proof: ${JSON.stringify(response.body)}`);
  return {
    account,
    accessToken: response.body.access_token,
    refreshToken: response.body.refresh_token,
    userId: response.body.user.id,
  };
}

export async function putSecret(
  baseUrl: string,
  token: string,
  secretType: string,
  value: string,
): Promise<Response> {
  return await fetch(`${baseUrl}/api/secrets`, {
    method: "PUT",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ secretType, value }),
  });
}

/**
 * CPU time (user + system, ms) a process has used so far, from /proc/<pid>/stat (read with `cat`:
 * Deno reads /proc itself only with --allow-all); null where there is no /proc.
 */
export async function cpuMs(pid: number): Promise<number | null> {
  try {
    const out = await new Deno.Command("cat", {
      args: [`/proc/${pid}/stat`],
      stdout: "piped",
      stderr: "null",
    }).output();
    if (!out.success) return null;
    const stat = new TextDecoder().decode(out.stdout);
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime, in 10 ms ticks
  } catch {
    return null;
  }
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index];
}
