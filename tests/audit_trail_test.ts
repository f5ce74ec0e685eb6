/**
 * The audit trail at a year's scale (issue 40), on both engines: a key's last use moves only when
 * a reveal released it, and the trail keeps events for AUDIT_RETENTION_DAYS, expired a bounded
 * number at a time by the reveals that grow it, while each key's last use outlives its event.
 */
import assert from "node:assert/strict";
import { ConfigError, parseConfig } from "../functions/_shared/config/config.ts";
import { bearer, signIn, type TestApp, testEnv } from "./support/app.ts";
import { describeWithDatabase } from "./support/suite.ts";

type Listed = { secretType: string; lastUsedAt: string | null };

async function send(app: TestApp, method: string, path: string, token: string, body?: unknown) {
  const headers = bearer(token, { "content-type": "application/json" });
  if (path.endsWith("/reveal")) headers["x-service-server-secret"] = app.config.serverRevealToken;
  const init = { method, headers, body: body === undefined ? undefined : JSON.stringify(body) };
  const response = await app.fetch(path, init);
  return { status: response.status, body: await response.json() };
}

async function lastUses(app: TestApp, token: string): Promise<Record<string, string | null>> {
  const { body } = await send(app, "GET", "/api/secrets", token);
  return Object.fromEntries(body.secrets.map((s: Listed) => [s.secretType, s.lastUsedAt]));
}

/** Makes `secretType`'s stored ciphertext fail to authenticate (another type's, copied in). */
async function spoil(app: TestApp, userId: string, secretType: string, from: string) {
  await app.database.db.query(
    `update public.user_secrets d set ciphertext = e.ciphertext, iv = e.iv
       from public.user_secrets e
      where d.user_id = $1 and e.user_id = $1 and d.secret_type = $2 and e.secret_type = $3`,
    [userId, secretType, from],
  );
}

/** `n` events of `userId` from `days` ago, at the head of the trail (the lowest ids). */
async function oldEvents(app: TestApp, userId: string, n: number, days: number, firstId: number) {
  await app.database.db.query(
    `insert into public.secret_events (id, user_id, secret_types, action, occurred_at)
       overriding system value
     select $3::bigint + g, $1, array['provider_b_key'], 'reveal',
            now() - make_interval(days => $2::integer)
       from generate_series(0, $4::integer - 1) g`,
    [userId, days, firstId, n],
  );
}

async function eventsOf(app: TestApp, userId: string): Promise<number> {
  const [row] = await app.database.db.query<{ n: number }>(
    "select count(*)::integer as n from public.secret_events where user_id = $1",
    [userId],
  );
  return row.n;
}

describeWithDatabase("the audit trail at a year's scale", {
  async "a reveal whose decryption failed does not move a key's last use, a released one does"(
    app,
  ) {
    const creator = await signIn(app);
    const token = creator.accessToken;
    for (const secretType of ["provider_d_key", "provider_e_key"]) {
      const value = `sk-${secretType}-${crypto.randomUUID()}`;
      assert.equal(
        (await send(app, "PUT", "/api/secrets", token, { secretType, value })).status,
        200,
      );
    }
    // Saved, never revealed: never used. Then a spoiled key fails the first reveal of both.
    await spoil(app, creator.userId, "provider_d_key", "provider_e_key");
    const firstFailed = await send(app, "POST", "/api/secrets/reveal", token, {});
    assert.equal(firstFailed.body.error?.code, "decryption_failed");
    assert.deepEqual(await lastUses(app, token), { provider_d_key: null, provider_e_key: null });

    // A released reveal is a last use; e decrypted but was not released by the failed one.
    const revealed = await send(app, "POST", "/api/secrets/reveal", token, {
      secretTypes: ["provider_e_key"],
    });
    assert.equal(revealed.status, 200);
    const released = await lastUses(app, token);
    assert.equal(released.provider_d_key, null);
    assert.ok(released.provider_e_key !== null, "the released key has a last use");

    const failedAgain = await send(app, "POST", "/api/secrets/reveal", token, {});
    assert.equal(failedAgain.body.error?.code, "decryption_failed");
    assert.deepEqual(await lastUses(app, token), released, "the failed reveal is taken back");
    const actions = await app.database.db.query<{ action: string }>(
      `select action from public.secret_events where user_id = $1 and action like 'reveal%'
        order by id`,
      [creator.userId],
    );
    assert.deepEqual(actions.map((row) => row.action), [
      "reveal",
      "reveal_failed",
      "reveal",
      "reveal",
      "reveal_failed",
    ]);
  },

  async "a reveal expires at most 16 events past the retention, oldest first, and no others"(app) {
    assert.equal(app.config.auditRetentionDays, 30);
    const creator = await signIn(app);
    const token = creator.accessToken;
    const value = `sk-retained-${crypto.randomUUID()}`;
    await send(app, "PUT", "/api/secrets", token, { secretType: "provider_b_key", value });
    await send(app, "POST", "/api/secrets/reveal", token, {});
    const lastUse = (await lastUses(app, token)).provider_b_key;
    assert.ok(lastUse !== null);
    // 20 expired events, then 5 within the window, all older than every other event's id.
    const other = await signIn(app);
    await oldEvents(app, other.userId, 20, 31, -1000);
    await oldEvents(app, other.userId, 5, 29, -500);
    assert.equal(await eventsOf(app, other.userId), 25);

    await send(app, "POST", "/api/secrets/reveal", token, {});
    assert.equal(await eventsOf(app, other.userId), 9, "16 expired events went with one reveal");
    await send(app, "POST", "/api/secrets/reveal", token, {});
    assert.equal(await eventsOf(app, other.userId), 5, "the rest went with the next");
    await send(app, "POST", "/api/secrets/reveal", token, {});
    assert.equal(await eventsOf(app, other.userId), 5, "events within the window stay");

    // The creator's own reveal events going does not take its keys' last use with them.
    await app.database.db.query(
      "delete from public.secret_events where user_id = $1 and action = 'reveal'",
      [creator.userId],
    );
    assert.notEqual((await lastUses(app, token)).provider_b_key, null);
  },
}, { AUDIT_RETENTION_DAYS: "30" });

describeWithDatabase("an audit trail kept forever", {
  async "with AUDIT_RETENTION_DAYS=forever a reveal removes no event, however old"(app) {
    assert.equal(app.config.auditRetentionDays, null);
    const creator = await signIn(app);
    const token = creator.accessToken;
    const value = `sk-forever-${crypto.randomUUID()}`;
    await send(app, "PUT", "/api/secrets", token, { secretType: "provider_b_key", value });
    await oldEvents(app, creator.userId, 3, 5000, -100);
    assert.equal((await send(app, "POST", "/api/secrets/reveal", token, {})).status, 200);
    const [row] = await app.database.db.query<{ n: number }>(
      "select count(*)::integer as n from public.secret_events where id < 0",
    );
    assert.equal(row.n, 3);
  },
}, { AUDIT_RETENTION_DAYS: "forever" });

Deno.test("AUDIT_RETENTION_DAYS defaults to 400 days, reads forever as no limit, refuses 0", () => {
  assert.equal(parseConfig(testEnv()).auditRetentionDays, 400);
  assert.equal(
    parseConfig(testEnv({ AUDIT_RETENTION_DAYS: " Forever " })).auditRetentionDays,
    null,
  );
  assert.equal(parseConfig(testEnv({ AUDIT_RETENTION_DAYS: "30" })).auditRetentionDays, 30);
  assert.throws(
    () => parseConfig(testEnv({ AUDIT_RETENTION_DAYS: "0" })),
    (error: unknown) =>
      error instanceof ConfigError &&
      error.message.includes(
        "AUDIT_RETENTION_DAYS: must be an integer from 1 to 36500, or forever",
      ),
  );
});
