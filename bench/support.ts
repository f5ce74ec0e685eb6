/**
 * What the bench and the load test share: processes with exactly the environment meant for them,
 * fresh databases, a client that signs in with real wallet signatures, and medians.
 */
import { decodeProtectedHeader } from "jose";
import postgres from "postgres";
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { SECRET_TYPES } from "../protocol/secret-types.ts";
import { openDatabase } from "../server/database.ts";
import { generateDevKeys } from "../server/dev-keys.ts";
import { generateLiveRunCredential } from "../functions/_shared/auth/live-run-credential-format.ts";
import { liveRunCredentialHash } from "../functions/_shared/auth/live-run-credential-hash.ts";
import { toHex } from "../functions/_shared/bytes.ts";
import { migrate } from "../server/migrations.ts";
import { createFreshPostgres } from "../tests/support/fresh-postgres.ts";
import { freePort } from "../tests/support/ports.ts";

export const ROOT = new URL("../", import.meta.url);

const LIMITS = "NONCE PROOF PROOF_PER_ADDRESS VAULT_WRITES REVEALS REVEALS_PER_TOKEN".split(" ");

/**
 * Keys for one run's processes, with every rate limit out of the way. No SERVER_REVEAL_TOKEN: the
 * reveals use a live-run credential (benchCredential), so they measure its lookup.
 */
export function serverEnv(): Record<string, string> {
  const limits = LIMITS.map((name) => [`RATE_LIMIT_${name}_PER_MINUTE`, "1000000"]);
  const { SERVER_REVEAL_TOKEN: _aRow, ...keys } = generateDevKeys();
  return { APP_ENV: "development", ...keys, ...Object.fromEntries(limits) };
}

/**
 * A live-run credential for every type, registered in `db` as a service named `bench` (PGlite:
 * before a server holds the directory), as `deno task credentials:add` would.
 */
export async function benchCredential(db: BenchDatabase): Promise<string> {
  const credential = generateLiveRunCredential();
  const types = SECRET_TYPES.map((type) => `'${type}'`).join(", ");
  await db.sql(
    `insert into public.live_run_credentials (name, secret_types, token_hash)
       values ('bench', array[${types}], '\\x${toHex(liveRunCredentialHash(credential))}')`,
  );
  return credential;
}

/**
 * All a child inherits from the bench: what Deno needs to run and find its caches. A DATABASE_URL
 * in the bench's own environment must not turn the PGlite server into a Postgres one.
 */
export const INHERITED_ENV = ("PATH HOME TMPDIR LANG TZ NO_COLOR DENO_DIR DENO_NO_UPDATE_CHECK " +
  "DENO_CERT XDG_CACHE_HOME NPM_CONFIG_REGISTRY SSL_CERT_FILE").split(" ");

export function childEnv(env: Record<string, string>): Record<string, string> {
  const inherited = INHERITED_ENV.map((name) => [name, Deno.env.get(name)]);
  return { ...Object.fromEntries(inherited.filter(([, value]) => value !== undefined)), ...env };
}

export interface ServerProcess {
  readonly url: string;
  readonly env: Record<string, string>;
  readonly pids: readonly number[];
  stop(): Promise<void>;
}

const PERMISSIONS = ["--allow-net", "--allow-env", "--allow-read", "--allow-write", "--allow-sys"];

/**
 * Runs `script` on a free port with `env` only; resolves once `readyPath` answers 200 naming
 * `storage` (a row must measure its label's engine), and throws if it names another.
 */
export async function startProcess(
  script: string,
  env: Record<string, string>,
  storage: string,
  readyPath = "/api/secrets",
): Promise<ServerProcess> {
  const port = freePort();
  const fullEnv = { ...env, PORT: String(port) };
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...PERMISSIONS, script],
    env: childEnv(fullEnv),
    clearEnv: true,
    cwd: ROOT.pathname,
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let stderr = "";
  const drain = (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      stderr = (stderr + chunk).slice(-4000); // the tail, for a start that fails
    }
  })().catch(() => {});
  let exited = false;
  child.status.then(() => exited = true);
  const server = {
    url: `http://127.0.0.1:${port}`,
    env: fullEnv,
    pids: [child.pid],
    async stop() {
      if (!exited) child.kill("SIGTERM");
      const timer = setTimeout(() => !exited && child.kill("SIGKILL"), 10_000);
      await child.status;
      clearTimeout(timer);
      await drain;
    },
  };
  for (const deadline = Date.now() + 60_000; !exited && Date.now() < deadline;) {
    const answer = await fetch(`${server.url}${readyPath}`).catch(() => null);
    const body = await answer?.json().catch(() => null);
    if (answer?.status === 200) {
      if (body?.storage === storage) return server;
      await server.stop();
      throw new Error(`${script} runs on ${body?.storage}, not ${storage}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await server.stop();
  throw new Error(`${script} did not start: ${stderr.slice(-2000)}`);
}

/** DATABASE_URL, else a local server on 5432 if one answers, with its version; null when none. */
export async function findPostgres(): Promise<{ url: string; version: string } | null> {
  const url = Deno.env.get("DATABASE_URL") || "postgres://postgres@127.0.0.1:5432/postgres";
  const sql = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} });
  try {
    return { url, version: (await sql`show server_version`)[0].server_version };
  } catch {
    return null;
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

export interface BenchDatabase {
  /** DATABASE_URL or PGLITE_DATA_DIR for the server. */
  readonly env: Record<string, string>;
  /** The direct URL (Postgres), which the deployed shape's functions are given beside the pooler's. */
  readonly url: string | null;
  /** Runs SQL with full rights (PGlite: only while no server holds the directory). */
  sql(script: string): Promise<void>;
  drop(): Promise<void>;
}

/** A new, migrated database: nothing from an earlier run is in it. */
export async function createDatabase(adminUrl: string | null): Promise<BenchDatabase> {
  if (adminUrl === null) {
    const dataDir = await Deno.makeTempDir({ prefix: "wallet-vault-bench-pglite-" });
    const open = () => openDatabase({ engine: "pglite", dataDir });
    const db = await open();
    await migrate(db).finally(() => db.close());
    return {
      env: { PGLITE_DATA_DIR: dataDir },
      url: null,
      async sql(script) {
        const db = await open();
        await db.execScript(script).finally(() => db.close());
      },
      // The local server locks the directory through a file beside it.
      drop: async () => {
        for (const path of [dataDir, `${dataDir}.lock`]) {
          await Deno.remove(path, { recursive: true }).catch(() => {});
        }
      },
    };
  }
  const fresh = await createFreshPostgres(adminUrl, {
    namePrefix: "wallet_vault_bench_",
    maxConnections: 2,
    queryTimeoutMs: 600_000,
  });
  return {
    env: { DATABASE_URL: fresh.url },
    url: fresh.url,
    sql: (script) => fresh.db.execScript(script),
    drop: () => fresh.drop().catch(() => {}),
  };
}

/**
 * Creators `from`..`to` in bulk, each with a wallet, a live session and all seven secrets (random
 * ciphertexts: only ever listed). Triggers are off so the audit trail is not part of the load.
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
             unnest(array[${SECRET_TYPES.map((type) => `'${type}'`).join(", ")}]) t;
    set session_replication_role = origin;
    analyze;
    -- So the bulk load's dirty pages are not written during the next measurement.
    checkpoint;`;
}

/**
 * The id of the first event seedTrailSql(…, step) writes: each step's block starts far above
 * every id before it, so the bench knows which events are where (the sequence resumes after it).
 */
export const trailBlockStart = (step: number) => (step + 1) * 10_000_000_000;

/**
 * `to - from` reveal events of `userId` (each naming all seven types, older than the ones before,
 * two seconds apart, well within the default retention), and as many of 1,000 other creators', in
 * bulk from id trailBlockStart(step). Triggers are off, so each key's last use is noted after.
 */
export function seedTrailSql(userId: string, from: number, to: number, step: number): string {
  const start = trailBlockStart(step);
  const types = `array[${SECRET_TYPES.map((type) => `'${type}'`).join(", ")}]`;
  const other = `('00000000-0000-4000-9000-' || lpad(to_hex(g % 1000), 12, '0'))::uuid`;
  return `
    set session_replication_role = replica;
    set statement_timeout = 0;
    insert into public.secret_events (id, user_id, secret_types, action, occurred_at)
      overriding system value
      select ${start} + g - ${from}, '${userId}', ${types}, 'reveal', now() - make_interval(secs => 2 * g)
        from generate_series(${from}, ${to} - 1) g;
    insert into public.secret_events (id, user_id, secret_types, action, occurred_at)
      overriding system value
      select ${start} + ${to} + g - ${2 * from}, ${other}, array['provider_b_key'], 'reveal',
             now() - make_interval(secs => 2 * g)
        from generate_series(${from}, ${to} - 1) g;
    select setval(pg_get_serial_sequence('public.secret_events', 'id'), ${start} + 2 * ${
    to - from
  });
    insert into public.secret_last_reveals (user_id, secret_type, revealed_at, event_id)
      select '${userId}', t, now(), ${start} from unnest(${types}) t
    on conflict do nothing;
    set session_replication_role = origin;
    analyze;
    checkpoint;`;
}

export type Session = Awaited<ReturnType<typeof signIn>>;

export const newAccount = () => privateKeyToAccount(generatePrivateKey());

export const jsonHeaders = { "content-type": "application/json" };

async function post(url: string, body: unknown) {
  const init = { method: "POST", headers: jsonHeaders, body: JSON.stringify(body) };
  const response = await fetch(url, init);
  return { status: response.status, body: await response.json() };
}

/** A nonce's message signed by `account`: a proof ready to exchange for a session. */
export async function preparedProof(baseUrl: string, account: PrivateKeyAccount) {
  const nonce = await post(`${baseUrl}/api/auth/nonce`, { address: account.address });
  if (nonce.status !== 200) throw new Error(`nonce: ${JSON.stringify(nonce.body)}`);
  const message = nonce.body.message as string;
  return { message, signature: await account.signMessage({ message }) };
}

export async function signIn(baseUrl: string, account = newAccount()) {
  const proof = await preparedProof(baseUrl, account);
  const answer = await post(`${baseUrl}/api/auth/wallet-proof`, proof);
  if (answer.status !== 200) throw new Error(`wallet-proof: ${JSON.stringify(answer.body)}`);
  const accessToken = answer.body.access_token as string;
  // The bench measures sessions as production signs them; a legacy HS256 server would flatter it.
  const { alg } = decodeProtectedHeader(accessToken);
  if (alg !== "ES256") throw new Error(`the bench measures ES256 sessions, not ${alg}`);
  return { accessToken, userId: answer.body.user.id as string };
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** [median, min, max], rounded for a small results file; null when nothing was measured. */
export type Spread = [median: number, min: number, max: number];

export function spread(values: readonly number[]): Spread | null {
  const present = values.filter((value) => Number.isFinite(value));
  if (present.length === 0) return null;
  const round = (value: number) => Number(value.toPrecision(3));
  return [round(median(present)), round(Math.min(...present)), round(Math.max(...present))];
}

export const log = (() => {
  const started = performance.now();
  return (line: string) =>
    console.error(`[${((performance.now() - started) / 1000).toFixed(1).padStart(6)} s] ${line}`);
})();
