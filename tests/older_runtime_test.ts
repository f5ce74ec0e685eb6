/**
 * The deployed functions on an older Deno (tests/support/older-deno.ts: 2.1, V8 13.0, the line
 * Supabase's Edge Runtime followed in 2025), each in its own process (one instance each) with
 * --allow-net --allow-env only and Supabase's environment, APP_ENV=production, straight to
 * PostgreSQL (the pooler is the edge-shape test's): sign-in, save and reveal through the api
 * function, the list through user-secrets' own URL, the refresh through wallet-proof's, then
 * sign-out. Needs DATABASE_URL and the older Deno; skipped, saying so, without either.
 */
import assert from "node:assert/strict";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { openTestDatabase } from "./support/database.ts";
import { signingKey } from "./support/config-env.ts";
import { addCredential } from "../server/live-run-credentials.ts";
import {
  edgeClient,
  type EdgeShape,
  randomSecret,
  startEdgeShape,
  supabaseProvidedEnv,
} from "./support/edge.ts";
import { findOlderDeno, OLDER_DENO_VERSION } from "./support/older-deno.ts";
import { retryKeyHash } from "../sdk/src/session-storage.ts";

const ORIGIN = "https://app.example.com";
const lookup = Deno.env.get("DATABASE_URL")
  ? await findOlderDeno()
  : { missing: "DATABASE_URL is not set" };
if ("missing" in lookup) {
  console.warn(`skipping the Deno ${OLDER_DENO_VERSION} tests: ${lookup.missing}`);
}

const client = (edge: EdgeShape) => edgeClient(edge, ORIGIN);

Deno.test({
  name:
    `the functions on Deno ${OLDER_DENO_VERSION}: sign in, save, list, reveal, refresh, sign out`,
  ignore: "missing" in lookup,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    if (!("found" in lookup)) return;
    const database = await openTestDatabase("postgres");
    const serverRevealToken = randomSecret(32);
    const env = {
      ...supabaseProvidedEnv("https://olderdeno.supabase.co", database.url!).env,
      APP_ENV: "production",
      ENCRYPTION_KEYS: `k1:${randomSecret(32)}`,
      SERVER_REVEAL_TOKEN: serverRevealToken,
      // The asymmetric mode, as production runs it: a key in the Supabase CLI's format.
      JWT_SIGNING_KEYS: JSON.stringify(signingKey()),
      ALLOWED_ORIGINS: ORIGIN,
    };
    const edge = await startEdgeShape({ env, instancesPerFunction: 1, runtime: lookup.found })
      .catch(async (error) => {
        await database.close();
        throw error;
      });
    const call = client(edge);
    try {
      const account = privateKeyToAccount(generatePrivateKey());
      const nonce = await call("/functions/v1/api/auth/nonce", {
        method: "POST",
        body: { address: account.address, chainId: 1 },
      });
      assert.equal(nonce.status, 200, JSON.stringify(nonce.body));
      const message = nonce.body.message as string;
      const signIn = await call("/functions/v1/api/auth/wallet-proof", {
        method: "POST",
        body: { message, signature: await account.signMessage({ message }) },
      });
      assert.equal(signIn.status, 200, JSON.stringify(signIn.body));
      const session = signIn.body as { access_token: string; refresh_token: string };

      const value = `sk-older-deno-${crypto.randomUUID()}`;
      const saved = await call("/functions/v1/api/secrets", {
        method: "PUT",
        token: session.access_token,
        body: { secretType: "provider_b_key", value },
      });
      assert.equal(saved.status, 200, JSON.stringify(saved.body));
      const listed = await call("/functions/v1/user-secrets", { token: session.access_token });
      assert.equal(listed.status, 200, JSON.stringify(listed.body));
      assert.deepEqual(
        (listed.body.secrets as { secretType: string }[]).map((secret) => secret.secretType),
        ["provider_b_key"],
      );

      const refreshed = await call("/functions/v1/wallet-proof/refresh", {
        method: "POST",
        body: {
          refresh_token: session.refresh_token,
          retryKeyHash: await retryKeyHash(crypto.randomUUID()),
        },
      });
      assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
      const token = refreshed.body.access_token as string;
      const revealed = await call("/functions/v1/api/secrets/reveal", {
        method: "POST",
        token,
        serverToken: serverRevealToken,
        body: {},
      });
      assert.equal(revealed.status, 200, JSON.stringify(revealed.body));
      assert.deepEqual(
        (revealed.body.secrets as { secretType: string; value: string }[]).map((secret) => [
          secret.secretType,
          secret.value,
        ]),
        [["provider_b_key", value]],
      );
      // A service's own credential, scoped: in scope it reveals, out of scope it is refused.
      const { credential } = await addCredential(database.db, "image-worker", [
        "provider_b_key",
      ], null);
      for (const [secretTypes, status] of [[["provider_b_key"], 200], [["provider_c_key"], 403]]) {
        const scoped = await call("/functions/v1/api/secrets/reveal", {
          method: "POST",
          token,
          serverToken: credential,
          body: { secretTypes },
        });
        assert.equal(scoped.status, status, JSON.stringify(scoped.body));
      }

      const signedOut = await call("/functions/v1/api/auth/logout", { method: "POST", token });
      assert.equal(signedOut.status, 204, JSON.stringify(signedOut.body));
      const after = await call("/functions/v1/api/secrets", { token });
      assert.equal(after.status, 401);
      assert.equal((after.body.error as { code: string }).code, "session_revoked");

      const logs = edge.output();
      for (
        const secret of [
          value,
          serverRevealToken,
          JSON.parse(env.JWT_SIGNING_KEYS).d,
          session.refresh_token,
        ]
      ) {
        assert.ok(!logs.includes(secret), "a secret reached the logs");
      }
    } finally {
      await edge.stop();
      await database.close();
    }
  },
});
