/**
 * An in-process service for tests: real configuration (fresh random keys), a real database of the
 * chosen engine, the local server's app, and helpers that sign in with real wallet signatures.
 */
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { parseConfig } from "../../functions/_shared/config/config.ts";
import type { AppConfig } from "../../functions/_shared/config/app-config.ts";
import { createServiceContext, type ServiceContext } from "../../functions/_shared/context.ts";
import type { Database } from "../../functions/_shared/db/db.ts";
import { silentLogger } from "./log.ts";
import { createLocalApp, LOCAL_ANON_KEY, type LocalApp } from "../../server/app.ts";
import { generateDevKeys } from "../../server/dev-keys.ts";
import { assertContractKept, checkedApp } from "./contract.ts";
import { type Engine, openTestDatabase, type TestDatabase } from "./database.ts";

/** The origin tests pretend the local server runs on; sign-in messages are bound to it. */
export const TEST_ORIGIN = "http://127.0.0.1:54321";

export interface TestApp {
  readonly engine: Engine;
  readonly config: AppConfig;
  readonly context: ServiceContext;
  readonly app: LocalApp;
  readonly database: TestDatabase;
  /** Sends a request to the local app, as a client on 127.0.0.1 would. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

export function testEnv(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    APP_ENV: "test",
    PROJECT_NAME: "wallet-vault-test",
    SUPABASE_ANON_KEY: LOCAL_ANON_KEY,
    ...generateDevKeys(),
    RATE_LIMIT_NONCE_PER_MINUTE: "100000",
    RATE_LIMIT_PROOF_PER_MINUTE: "100000",
    RATE_LIMIT_PROOF_PER_ADDRESS_PER_MINUTE: "100000",
    RATE_LIMIT_REFRESH_PER_MINUTE: "100000",
    RATE_LIMIT_VAULT_WRITES_PER_MINUTE: "100000",
    RATE_LIMIT_REVEALS_PER_MINUTE: "100000",
    RATE_LIMIT_REVEALS_PER_TOKEN_PER_MINUTE: "100000",
    RATE_LIMIT_WRONG_REVEAL_TOKENS_PER_MINUTE: "100000",
    ...overrides,
  };
}

/** The app on its own fresh test database (openTestDatabase), dropped on close. */
export async function startTestApp(
  engine: Engine,
  env: Record<string, string> = {},
): Promise<TestApp> {
  const database = await openTestDatabase(engine);
  const { app, contractKept } = checkedAppOn(database.db, env, database.url);
  return {
    ...app,
    database,
    async close() {
      await database.close();
      contractKept();
    },
  };
}

/**
 * The local app on a database the caller opened (a throwaway cluster, a bench database), with the
 * same configuration path the server takes: `parseConfig` of an environment, then the context.
 */
export function appOn(
  db: Database,
  env: Record<string, string> = {},
  url: string | null = null,
): TestApp {
  const { app, contractKept } = checkedAppOn(db, env, url);
  return {
    ...app,
    async close() {
      await db.close();
      contractKept();
    },
  };
}

/** appOn's app, and a check that throws the answers that broke docs/openapi.json. */
function checkedAppOn(
  db: Database,
  env: Record<string, string>,
  url: string | null,
): { app: TestApp; contractKept: () => void } {
  const config = parseConfig(testEnv(env));
  const context = createServiceContext(config, db, silentLogger, { ownOrigins: [TEST_ORIGIN] });
  // Every answer is checked against docs/openapi.json (contract.ts); a violation fails the test.
  const checked = checkedApp(createLocalApp(context));
  const { app } = checked;
  const testApp: TestApp = {
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
  return { app: testApp, contractKept: () => assertContractKept(checked) };
}

export interface SignedIn {
  readonly account: PrivateKeyAccount;
  readonly accessToken: string;
  readonly refreshToken: string;
  readonly userId: string;
}

export function newWallet(): PrivateKeyAccount {
  return privateKeyToAccount(generatePrivateKey());
}

/** The whole sign-in through the /api proxy: nonce, EIP-4361 message, personal_sign, proof. */
export async function signIn(
  app: TestApp,
  account: PrivateKeyAccount = newWallet(),
): Promise<SignedIn> {
  const nonceResponse = await app.fetch("/api/auth/nonce", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ address: account.address }),
  });
  if (nonceResponse.status !== 200) throw new Error(`nonce: ${nonceResponse.status}`);
  const { message } = await nonceResponse.json();
  const signature = await account.signMessage({ message });
  const proofResponse = await app.fetch("/api/auth/wallet-proof", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ message, signature }),
  });
  const body = await proofResponse.json();
  if (proofResponse.status !== 200) throw new Error(`wallet-proof: ${JSON.stringify(body)}`);
  return {
    account,
    accessToken: body.access_token,
    refreshToken: body.refresh_token,
    userId: body.user.id,
  };
}

export function bearer(token: string, extra: Record<string, string> = {}): Record<string, string> {
  return { authorization: `Bearer ${token}`, ...extra };
}
