/**
 * What the bench and the load test share: a fresh database per engine (a new database on the
 * real server, a new data directory for PGlite) and an HTTP client that signs in with real wallet
 * signatures. The server as a process: bench/processes.ts.
 */
import postgres from "postgres";
import { type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { generatePrivateKey } from "viem/accounts";
import { openDatabase } from "../server/database.ts";
import { migrate } from "../scripts/lib/migrations.ts";
import { createFreshPostgres } from "../tests/support/fresh-postgres.ts";

export type Engine = "postgres" | "pglite";

export const DEFAULT_POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/postgres";

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
  const fresh = await createFreshPostgres(adminUrl!, {
    namePrefix: "wallet_vault_bench_",
    maxConnections: 2,
    queryTimeoutMs: 600_000,
  });
  return {
    engine,
    env: { DATABASE_URL: fresh.url },
    url: fresh.url,
    dataDir: null,
    sql: (script) => fresh.db.execScript(script),
    // Best effort, as the clean-up of a run: a failed drop must not fail what was measured.
    drop: () => fresh.drop().catch(() => {}),
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

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index];
}
