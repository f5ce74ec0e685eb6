/**
 * Limits on the vault (issue 13 item 11), on both engines, with real wallet sign-ins: PUT and
 * DELETE share one budget per creator, reveal has one per creator and one per server token. The
 * call over a limit is 429 rate_limited with Retry-After, changes nothing and reveals nothing, and
 * other creators are unaffected. Counted in the database, in the request's one statement.
 */
import assert from "node:assert/strict";
import { bearer, signIn, type TestApp } from "./support/app.ts";
import { describeWithDatabase } from "./support/suite.ts";

/** Waits for the next fixed window when fewer than `needSeconds` are left in this one. */
async function awayFromWindowEdge(needSeconds = 15) {
  const intoMinute = (Date.now() / 1000) % 60;
  if (intoMinute > 60 - needSeconds) {
    await new Promise((resolve) => setTimeout(resolve, (60 - intoMinute) * 1000 + 500));
  }
}

function send(app: TestApp, method: string, path: string, token: string, body: unknown) {
  const headers = bearer(token, { "content-type": "application/json" });
  if (path.endsWith("/reveal")) headers["x-service-server-secret"] = app.config.serverRevealToken;
  return app.fetch(path, { method, headers, body: JSON.stringify(body) });
}

const putSecret = (app: TestApp, token: string, secretType: string, value: string) =>
  send(app, "PUT", "/api/secrets", token, { secretType, value });
const deleteSecret = (app: TestApp, token: string, secretType: string) =>
  send(app, "DELETE", "/api/secrets", token, { secretType });
const reveal = (app: TestApp, token: string) => send(app, "POST", "/api/secrets/reveal", token, {});

async function status(response: Promise<Response>): Promise<number> {
  const answered = await response;
  await answered.body?.cancel();
  return answered.status;
}

/** Asserts a 429 rate_limited whose Retry-After is a whole number of seconds within the window. */
async function assertLimited(response: Promise<Response>): Promise<string> {
  const answered = await response;
  const text = await answered.text();
  assert.equal(answered.status, 429, text);
  const body = JSON.parse(text);
  assert.equal(body.error.code, "rate_limited");
  const retryAfter = Number(answered.headers.get("retry-after"));
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `${retryAfter}`);
  assert.equal(body.error.retryAfterSeconds, retryAfter);
  return text;
}

async function storedTypes(app: TestApp, userId: string): Promise<string[]> {
  const rows = await app.database.db.query<{ secret_type: string }>(
    "select secret_type from public.user_secrets where user_id = $1 order by secret_type",
    [userId],
  );
  return rows.map((row) => row.secret_type);
}

async function revealEvents(app: TestApp, userId: string): Promise<number> {
  const [{ count }] = await app.database.db.query<{ count: number }>(
    "select count(*)::int as count from public.secret_events where user_id = $1 and action = 'reveal'",
    [userId],
  );
  return count;
}

describeWithDatabase("vault limits per creator", {
  async "the write over a creator's limit is 429 with Retry-After and changes nothing"(app) {
    await awayFromWindowEdge();
    const alice = await signIn(app);
    // PUT and DELETE share the budget of three.
    assert.equal(await status(putSecret(app, alice.accessToken, "provider_b_key", "sk-one")), 200);
    assert.equal(await status(putSecret(app, alice.accessToken, "provider_c_key", "sk-two")), 200);
    assert.equal(await status(deleteSecret(app, alice.accessToken, "provider_c_key")), 200);
    await assertLimited(putSecret(app, alice.accessToken, "provider_d_key", "sk-four"));
    await assertLimited(deleteSecret(app, alice.accessToken, "provider_b_key"));
    // Through the function's own URL it is the same budget.
    await assertLimited(
      send(app, "PUT", "/functions/v1/user-secrets", alice.accessToken, {
        secretType: "provider_e_key",
        value: "sk-five",
      }),
    );
    assert.deepEqual(await storedTypes(app, alice.userId), ["provider_b_key"]);
    // Reading is not limited here.
    assert.equal(
      await status(app.fetch("/api/secrets", { headers: bearer(alice.accessToken) })),
      200,
    );
  },

  async "another creator's writes are unaffected by one creator's limit"(app) {
    await awayFromWindowEdge();
    const alice = await signIn(app);
    const bob = await signIn(app);
    for (const type of ["provider_a_api_key", "provider_b_key", "provider_c_key"]) {
      assert.equal(await status(putSecret(app, alice.accessToken, type, "sk-alice")), 200);
    }
    await assertLimited(putSecret(app, alice.accessToken, "provider_d_key", "sk-alice"));
    for (const type of ["provider_a_api_key", "provider_b_key", "provider_c_key"]) {
      assert.equal(await status(putSecret(app, bob.accessToken, type, "sk-bob")), 200);
    }
    assert.deepEqual(await storedTypes(app, bob.userId), [
      "provider_a_api_key",
      "provider_b_key",
      "provider_c_key",
    ]);
  },

  async "the reveal over a creator's limit is 429, releases nothing and records no reveal"(app) {
    await awayFromWindowEdge();
    const alice = await signIn(app);
    const bob = await signIn(app);
    const value = `sk-limited-${crypto.randomUUID()}`;
    assert.equal(await status(putSecret(app, alice.accessToken, "provider_f_api_key", value)), 200);
    assert.equal(await status(putSecret(app, bob.accessToken, "provider_f_api_key", value)), 200);
    for (let i = 0; i < 2; i++) assert.equal(await status(reveal(app, alice.accessToken)), 200);
    const text = await assertLimited(reveal(app, alice.accessToken));
    assert.ok(!text.includes(value));
    assert.equal(await revealEvents(app, alice.userId), 2);
    // Bob's own budget is untouched.
    for (let i = 0; i < 2; i++) assert.equal(await status(reveal(app, bob.accessToken)), 200);
  },

  async "an ended session is session_revoked and spends none of the creator's budget"(app) {
    await awayFromWindowEdge();
    const alice = await signIn(app);
    const second = await signIn(app, alice.account);
    const logout = await app.fetch("/api/auth/logout", {
      method: "POST",
      headers: bearer(alice.accessToken),
    });
    assert.equal(logout.status, 204);
    for (let i = 0; i < 5; i++) {
      const response = await putSecret(app, alice.accessToken, "provider_b_key", "sk-ended");
      assert.equal(response.status, 401);
      assert.equal((await response.json()).error.code, "session_revoked");
    }
    // The same creator's live session still has its three writes.
    for (let i = 0; i < 3; i++) {
      assert.equal(await status(putSecret(app, second.accessToken, "provider_b_key", "sk-x")), 200);
    }
  },

  async "writes that spend a creator's budget cannot keep the owner from locking"(app) {
    await awayFromWindowEdge();
    const alice = await signIn(app);
    // A stolen session spends the write budget...
    const thief = await signIn(app, alice.account);
    for (const type of ["provider_a_api_key", "provider_b_key", "provider_c_key"]) {
      assert.equal(await status(putSecret(app, thief.accessToken, type, "sk-thief")), 200);
    }
    await assertLimited(putSecret(app, thief.accessToken, "provider_d_key", "sk-thief"));
    // ...and the owner still locks live-run access.
    const locked = await send(app, "POST", "/api/secrets/lock", alice.accessToken, {});
    assert.equal(locked.status, 200, await locked.clone().text());
    assert.equal((await locked.json()).locked, true);
  },
}, {
  RATE_LIMIT_VAULT_WRITES_PER_MINUTE: "3",
  RATE_LIMIT_REVEALS_PER_MINUTE: "2",
});

describeWithDatabase("vault limits per server token", {
  async "the reveal over the token's limit is 429 whichever creator asks"(app) {
    await awayFromWindowEdge();
    const creators = [await signIn(app), await signIn(app), await signIn(app), await signIn(app)];
    for (const creator of creators.slice(0, 3)) {
      assert.equal(await status(reveal(app, creator.accessToken)), 200);
    }
    await assertLimited(reveal(app, creators[3].accessToken));
    await assertLimited(reveal(app, creators[0].accessToken));
    // The counter names the token by a hash prefix, never by the token itself.
    const buckets = await app.database.db.query<{ bucket: string }>(
      "select bucket from public.rate_limit_windows where bucket like 'vault:reveal:token:%'",
    );
    assert.equal(buckets.length, 1);
    assert.match(buckets[0].bucket, /^vault:reveal:token:[0-9a-f]{16}$/);
    assert.ok(!buckets[0].bucket.includes(app.config.serverRevealToken.slice(0, 8)));
    // Writes are not the token's business.
    assert.equal(
      await status(putSecret(app, creators[3].accessToken, "provider_b_key", "sk-still")),
      200,
    );
  },
}, {
  RATE_LIMIT_REVEALS_PER_MINUTE: "100",
  RATE_LIMIT_REVEALS_PER_TOKEN_PER_MINUTE: "3",
});
