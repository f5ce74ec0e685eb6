/**
 * Rotation and migration as an operator runs them (docs/operations.md), on a real database: one
 * service configured step by step over the same data, as redeploys with new JWT_SIGNING_KEYS
 * would. At no step is a creator signed out: access tokens of the previous key verify until it is
 * removed, and refresh tokens from before any step still refresh after every one.
 */
import assert from "node:assert/strict";
import { decodeProtectedHeader } from "jose";
import { appOn, bearer, signIn, startTestApp, type TestApp } from "./support/app.ts";
import { signingKey } from "./support/config-env.ts";
import { testEngines } from "./support/database.ts";
import { generateDevKeys } from "../server/dev-keys.ts";

/** GET /api/secrets with `token`: its status and error code, if any. */
async function listWith(app: TestApp, token: string): Promise<[number, string | undefined]> {
  const response = await app.fetch("/api/secrets", { headers: bearer(token) });
  const body = await response.json();
  return [response.status, body.error?.code];
}

/** A refresh of `refreshToken`: the new access token. */
async function refreshed(app: TestApp, refreshToken: string): Promise<string> {
  const response = await app.fetch("/api/auth/refresh", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ refresh_token: refreshToken }),
  });
  const body = await response.json();
  assert.equal(response.status, 200, JSON.stringify(body));
  return body.access_token;
}

async function publishedKids(app: TestApp): Promise<string[]> {
  const response = await app.fetch("/functions/v1/wallet-proof/.well-known/jwks.json");
  return (await response.json()).keys.map((key: { kid: string }) => key.kid);
}

const kidOf = (token: string) => decodeProtectedHeader(token).kid;

for (const engine of testEngines()) {
  Deno.test({
    name:
      `rotating the signing key signs no one out, then the removed key's tokens are refused [${engine}]`,
    sanitizeOps: false,
    sanitizeResources: false,
    async fn() {
      const { ENCRYPTION_KEY, SERVER_REVEAL_TOKEN } = generateDevKeys();
      const [a, b] = [signingKey(), signingKey()];
      const env = (keys: unknown[]) => ({
        ENCRYPTION_KEY,
        SERVER_REVEAL_TOKEN,
        JWT_SIGNING_KEYS: JSON.stringify(keys),
      });
      const inUse = await startTestApp(engine, env([a]));
      try {
        const step = (keys: unknown[]) => appOn(inUse.database.db, env(keys));
        const before = await signIn(inUse);
        const other = await signIn(inUse);
        assert.equal(kidOf(before.accessToken), a.kid);

        const standby = step([a, b]);
        assert.deepEqual(await publishedKids(standby), [a.kid, b.kid]);
        assert.equal(kidOf((await signIn(standby)).accessToken), a.kid, "the standby key waits");
        assert.deepEqual(await listWith(standby, before.accessToken), [200, undefined]);

        const switched = step([b, a]);
        assert.deepEqual(await listWith(switched, before.accessToken), [200, undefined]);
        const after = await refreshed(switched, before.refreshToken);
        assert.equal(kidOf(after), b.kid);
        assert.deepEqual(await listWith(switched, after), [200, undefined]);

        const removed = step([b]);
        assert.deepEqual(await publishedKids(removed), [b.kid]);
        assert.deepEqual(await listWith(removed, before.accessToken), [401, "invalid_token"]);
        assert.deepEqual(await listWith(removed, after), [200, undefined]);
        // A refresh token from before every step still refreshes: rotation never touches them.
        const otherAfter = await refreshed(removed, other.refreshToken);
        assert.equal(kidOf(otherAfter), b.kid);
        assert.deepEqual(await listWith(removed, otherAfter), [200, undefined]);
      } finally {
        await inUse.close();
      }
    },
  });

  Deno.test({
    name: `migrating from the legacy HS256 secret to ES256 signs no one out [${engine}]`,
    sanitizeOps: false,
    sanitizeResources: false,
    async fn() {
      const { ENCRYPTION_KEY, SERVER_REVEAL_TOKEN } = generateDevKeys();
      const JWT_SECRET = crypto.randomUUID() + crypto.randomUUID();
      const key = signingKey();
      const base = { ENCRYPTION_KEY, SERVER_REVEAL_TOKEN, JWT_SECRET };
      // Blank is unset: the legacy service has no signing key at all.
      const legacy = await startTestApp(engine, {
        ...base,
        JWT_LEGACY_HS256: "sign",
        JWT_SIGNING_KEYS: "",
      });
      try {
        const step = (extra: Record<string, string>) =>
          appOn(legacy.database.db, { ...base, JWT_SIGNING_KEYS: JSON.stringify(key), ...extra });
        const before = await signIn(legacy);
        const other = await signIn(legacy);
        assert.deepEqual(decodeProtectedHeader(before.accessToken), { alg: "HS256", typ: "JWT" });
        assert.deepEqual(await publishedKids(legacy), []);

        const prepared = step({ JWT_LEGACY_HS256: "sign" });
        assert.deepEqual(await publishedKids(prepared), [key.kid]);
        assert.equal(decodeProtectedHeader((await signIn(prepared)).accessToken).alg, "HS256");

        const migrating = step({ JWT_LEGACY_HS256: "verify" });
        assert.deepEqual(await listWith(migrating, before.accessToken), [200, undefined]);
        const after = await refreshed(migrating, before.refreshToken);
        assert.deepEqual(decodeProtectedHeader(after), { alg: "ES256", kid: key.kid, typ: "JWT" });

        const done = step({});
        assert.deepEqual(await listWith(done, before.accessToken), [401, "invalid_token"]);
        assert.deepEqual(await listWith(done, after), [200, undefined]);
        const otherAfter = await refreshed(done, other.refreshToken);
        assert.equal(decodeProtectedHeader(otherAfter).alg, "ES256");
      } finally {
        await legacy.close();
      }
    },
  });
}
