/**
 * The secret vault end to end, on both engines, with real wallet sign-ins: masked reads, encrypted
 * upserts and deletes, the server-only reveal, isolation between creators (through the API and in
 * SQL), no plaintext in the database, authenticated ciphertexts, missing keys, rotation, audit.
 */
import assert from "node:assert/strict";
import { decodeJwt } from "jose";
import { createServiceContext } from "../functions/_shared/context.ts";
import { asCreator, type CreatorClaims } from "./support/as-creator.ts";
import type { EncryptionKeySpec } from "../functions/_shared/config/encryption-keys.ts";
import { silentLogger } from "./support/log.ts";
import { SECRET_TYPES, type SecretType } from "../protocol/secret-types.ts";
import { serviceSigner, strangerSigner } from "./support/session-signers.ts";
import { createKeyring } from "../functions/_shared/vault/vault-crypto.ts";
import { createLocalApp } from "../server/app.ts";
import { MAX_PASSES, rotateKeys } from "../scripts/lib/key-rotation.ts";
import { bearer, type SignedIn, signIn, TEST_ORIGIN, type TestApp } from "./support/app.ts";
import { describeWithDatabase } from "./support/suite.ts";

type Fetch = (path: string, init?: RequestInit) => Promise<Response>;

interface CallOptions {
  token?: string | null;
  body?: unknown;
  /** A raw body, sent as is (for malformed JSON and the like). */
  rawBody?: string;
  serverToken?: string | null;
  headers?: Record<string, string>;
}

function call(fetch: Fetch, method: string, path: string, options: CallOptions = {}) {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.serverToken != null) headers["x-service-server-secret"] = options.serverToken;
  let body: string | undefined = options.rawBody;
  if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined && !("content-type" in headers)) {
    headers["content-type"] = "application/json";
  }
  return fetch(path, { method, headers, body });
}

const put = (fetch: Fetch, token: string, secretType: string, value: unknown) =>
  call(fetch, "PUT", "/api/secrets", { token, body: { secretType, value } });
const remove = (fetch: Fetch, token: string, secretType: string) =>
  call(fetch, "DELETE", "/api/secrets", { token, body: { secretType } });
const list = (fetch: Fetch, token?: string) =>
  call(fetch, "GET", "/api/secrets", { token: token ?? null });

async function reveal(
  app: TestApp,
  token: string,
  body?: unknown,
  fetch: Fetch = app.fetch,
): Promise<Response> {
  return await call(fetch, "POST", "/api/secrets/reveal", {
    token,
    serverToken: app.config.serverRevealToken,
    body,
  });
}

async function revealed(app: TestApp, token: string, body?: unknown, fetch?: Fetch) {
  const response = await reveal(app, token, body, fetch);
  const text = await response.text();
  assert.equal(response.status, 200, text);
  const { secrets } = JSON.parse(text) as {
    secrets: { secretType: SecretType; value: string; updatedAt: string }[];
  };
  return Object.fromEntries(secrets.map((s) => [s.secretType, s.value]));
}

async function ok(response: Response | Promise<Response>, status = 200) {
  const answered = await response;
  const text = await answered.text();
  assert.equal(answered.status, status, text);
  return JSON.parse(text);
}

async function expectError(response: Response | Promise<Response>, status: number, code: string) {
  const answered = await response;
  const text = await answered.text();
  assert.equal(answered.status, status, text);
  const body = JSON.parse(text);
  assert.equal(body.error.code, code, text);
  return { body, text };
}

const uniqueValue = (prefix = "sk-live") => `${prefix}-${crypto.randomUUID()}`;
const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** The local app over the same database and sessions, but another keyring. */
function withKeyring(app: TestApp, encryptionKeys: readonly EncryptionKeySpec[]): Fetch {
  const context = createServiceContext(
    { ...app.config, encryptionKeys },
    app.database.db,
    silentLogger,
    { ownOrigins: [TEST_ORIGIN] },
  );
  const { handler } = createLocalApp(context);
  return (path, init = {}) => {
    const request = new Request(new URL(path, TEST_ORIGIN), init);
    request.headers.set("x-forwarded-for", "127.0.0.1");
    return handler(request);
  };
}

const newKey = (id: string): EncryptionKeySpec => ({
  id,
  key: crypto.getRandomValues(new Uint8Array(32)),
});
const base64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const hex = (text: string) =>
  Array.from(new TextEncoder().encode(text), (b) => b.toString(16).padStart(2, "0")).join("");

/** The claims a creator's live session gives row-level security (its access token's). */
function sessionClaims(creator: SignedIn): CreatorClaims {
  const claims = decodeJwt(creator.accessToken);
  return {
    sub: creator.userId,
    role: "authenticated",
    session_id: claims.session_id as string,
    wallet_address: claims.wallet_address as string,
  };
}

/** Every row of every table in public, as text (bytea as hex): what someone with a dump sees. */
async function dumpEverything(app: TestApp): Promise<string> {
  const db = app.database.db;
  const tables = await db.query<{ tablename: string }>(
    "select tablename from pg_tables where schemaname = 'public' order by tablename",
  );
  assert.ok(tables.some((t) => t.tablename === "user_secrets"));
  const parts: string[] = [];
  for (const { tablename } of tables) {
    const rows = await db.query<{ row: string }>(
      `select to_jsonb(t)::text as row from public.${tablename} t`,
    );
    parts.push(...rows.map((r) => r.row));
  }
  return parts.join("\n");
}

function assertNoPlaintext(haystack: string, values: readonly string[]) {
  const lower = haystack.toLowerCase();
  for (const value of values) {
    assert.ok(!haystack.includes(value), "a stored value appears in plaintext");
    assert.ok(!lower.includes(hex(value)), "a stored value appears hex-encoded");
    assert.ok(!haystack.includes(btoa(value)), "a stored value appears base64-encoded");
  }
}

async function rawRow(app: TestApp, userId: string, secretType: SecretType) {
  const [row] = await app.database.db.query<{
    ciphertext: Uint8Array;
    iv: Uint8Array;
    key_id: string;
    hint: string | null;
    updated_at: Date;
  }>(
    `select ciphertext, iv, key_id, hint, updated_at from public.user_secrets
      where user_id = $1 and secret_type = $2`,
    [userId, secretType],
  );
  return row;
}

async function events(app: TestApp, userId: string) {
  return await app.database.db.query<{ secret_types: string[]; action: string; row: string }>(
    `select secret_types, action, to_jsonb(e)::text as row from public.secret_events e
      where user_id = $1 order by id`,
    [userId],
  );
}

describeWithDatabase("secret vault", {
  async "the whole lifecycle works through the proxy with a real wallet sign-in"(app) {
    const { accessToken: token } = await signIn(app);
    assert.deepEqual((await ok(list(app.fetch, token))).secrets, []);

    const key = uniqueValue("sk-live");
    const saved = await ok(put(app.fetch, token, "provider_b_key", key));
    assert.deepEqual(Object.keys(saved).sort(), ["created", "secretType", "updatedAt"]);
    assert.equal(saved.secretType, "provider_b_key");
    assert.equal(saved.created, true);
    assert.match(saved.updatedAt, ISO_UTC);

    const orgId = "org-4711";
    assert.equal((await ok(put(app.fetch, token, "provider_a_org_id", orgId))).created, true);

    const listed = await ok(list(app.fetch, token));
    assert.deepEqual(listed.secretTypes, SECRET_TYPES);
    assert.equal(listed.configured, true);
    // The spec's type order, not insertion order; a hint only for the long value; no live run
    // has used either yet.
    assert.deepEqual(listed.secrets, [
      {
        secretType: "provider_a_org_id",
        updatedAt: listed.secrets[0].updatedAt,
        lastUsedAt: null,
      },
      {
        secretType: "provider_b_key",
        updatedAt: saved.updatedAt,
        hint: `…${key.slice(-4)}`,
        lastUsedAt: null,
      },
    ]);
    assert.match(listed.secrets[0].updatedAt, ISO_UTC);

    const replacement = uniqueValue("sk-rotated");
    const replaced = await ok(put(app.fetch, token, "provider_b_key", replacement));
    assert.equal(replaced.created, false);
    assert.ok(Date.parse(replaced.updatedAt) > Date.parse(saved.updatedAt), "updatedAt moves");

    assert.deepEqual(await revealed(app, token), {
      provider_a_org_id: orgId,
      provider_b_key: replacement,
    });
    // The function's own URL answers the same, and a list of types narrows the answer.
    const direct = await ok(
      call(app.fetch, "POST", "/functions/v1/user-secrets/reveal", {
        token,
        serverToken: app.config.serverRevealToken,
        body: { secretTypes: ["provider_b_key", "provider_e_key"] },
      }),
    );
    assert.deepEqual(direct.secrets, [
      { secretType: "provider_b_key", value: replacement, updatedAt: replaced.updatedAt },
    ]);

    assert.deepEqual(await ok(remove(app.fetch, token, "provider_b_key")), {
      secretType: "provider_b_key",
      deleted: true,
    });
    assert.deepEqual(
      (await ok(list(app.fetch, token))).secrets.map((s: { secretType: string }) => s.secretType),
      ["provider_a_org_id"],
    );
    await expectError(remove(app.fetch, token, "provider_b_key"), 404, "secret_not_found");
    assert.deepEqual(await revealed(app, token), { provider_a_org_id: orgId });
  },

  async "saving a type again replaces its value and keeps one row"(app) {
    const creator = await signIn(app);
    const values = [uniqueValue("sk-one"), uniqueValue("sk-two"), "short-three"];
    let previous: Date | null = null;
    for (const value of values) {
      await ok(put(app.fetch, creator.accessToken, "provider_c_key", value));
      const row = await rawRow(app, creator.userId, "provider_c_key");
      assert.equal(row.hint, value.length >= 16 ? `…${value.slice(-4)}` : null);
      if (previous) assert.ok(row.updated_at > previous);
      previous = row.updated_at;
    }
    const [{ count }] = await app.database.db.query<{ count: number }>(
      "select count(*)::int as count from public.user_secrets where user_id = $1",
      [creator.userId],
    );
    assert.equal(count, 1);
    assert.deepEqual(await revealed(app, creator.accessToken), { provider_c_key: "short-three" });
    // The short value left no hint behind from the long one it replaced.
    assert.deepEqual(
      Object.keys((await ok(list(app.fetch, creator.accessToken))).secrets[0]).sort(),
      ["lastUsedAt", "secretType", "updatedAt"],
    );
  },

  async "creator A can neither list, overwrite, delete nor reveal B's entries through the API"(
    app,
  ) {
    const alice = await signIn(app);
    const bob = await signIn(app);
    const bobB = uniqueValue("sk-bob-b");
    const bobC = uniqueValue("sk-bob-c");
    await ok(put(app.fetch, bob.accessToken, "provider_b_key", bobB));
    await ok(put(app.fetch, bob.accessToken, "provider_c_key", bobC));

    assert.deepEqual((await ok(list(app.fetch, alice.accessToken))).secrets, []);
    const aliceB = uniqueValue("sk-alice-b");
    // Alice's put of the same type makes her own entry; Bob's stays as it was.
    assert.equal(
      (await ok(put(app.fetch, alice.accessToken, "provider_b_key", aliceB))).created,
      true,
    );
    await expectError(
      remove(app.fetch, alice.accessToken, "provider_c_key"),
      404,
      "secret_not_found",
    );

    assert.deepEqual(await revealed(app, alice.accessToken), { provider_b_key: aliceB });
    assert.deepEqual(await revealed(app, bob.accessToken), {
      provider_b_key: bobB,
      provider_c_key: bobC,
    });
    const aliceList = JSON.stringify(await ok(list(app.fetch, alice.accessToken)));
    assert.ok(!aliceList.includes(bobB.slice(-4)), "not even Bob's hint");
  },

  async "creator A can neither read, change, delete nor plant B's rows in SQL as authenticated"(
    app,
  ) {
    const db = app.database.db;
    const alice = await signIn(app);
    const bob = await signIn(app);
    await ok(put(app.fetch, alice.accessToken, "provider_d_key", uniqueValue()));
    await ok(put(app.fetch, bob.accessToken, "provider_d_key", uniqueValue()));
    const before = await rawRow(app, bob.userId, "provider_d_key");
    const aliceBefore = await rawRow(app, alice.userId, "provider_d_key");
    // Alice's own live session: the most `authenticated` can hold.
    const asAlice = sessionClaims(alice);

    const seen = await asCreator(
      db,
      asAlice,
      (tx) => tx.query<{ user_id: string }>("select user_id from public.user_secrets"),
    );
    assert.deepEqual(new Set(seen.map((r) => r.user_id)), new Set([alice.userId]));
    for (
      const sql of [
        "select secret_type, hint, updated_at from public.user_secrets where user_id = $1",
        "select * from public.secret_events where user_id = $1",
      ]
    ) {
      const rows = await asCreator(db, asAlice, (tx) => tx.query(sql, [bob.userId]));
      assert.deepEqual(rows, [], sql);
    }
    // `authenticated` writes nothing at all (the service writes through its checked functions):
    // changing, deleting or moving rows, hers or Bob's, or inserting one for him, is refused.
    const refused: [string, unknown[]][] = [
      ["update public.user_secrets set key_id = 'k0' where user_id = $1 returning 1", [bob.userId]],
      ["update public.user_secrets set hint = '…xxxx' where user_id = $1", [alice.userId]],
      ["delete from public.user_secrets where user_id = $1 returning 1", [bob.userId]],
      ["delete from public.user_secrets where user_id = $1", [alice.userId]],
      ["update public.user_secrets set user_id = $1 where user_id = $2", [
        bob.userId,
        alice.userId,
      ]],
      [
        `insert into public.user_secrets (user_id, secret_type, ciphertext, iv, key_id)
           values ($1, 'provider_e_key', $2, $3, 'k1')`,
        [bob.userId, new Uint8Array(32), new Uint8Array(12)],
      ],
    ];
    for (const [sql, params] of refused) {
      await assert.rejects(
        asCreator(db, asAlice, (tx) => tx.query(sql, params)),
        (error: { code?: string }) => error.code === "42501",
        sql,
      );
    }
    assert.deepEqual(await rawRow(app, bob.userId, "provider_d_key"), before);
    assert.deepEqual(await rawRow(app, alice.userId, "provider_d_key"), aliceBefore);
  },

  async "GET never contains a value, whatever is stored"(app) {
    const creator = await signIn(app);
    const stored: Partial<Record<SecretType, string>> = {
      provider_a_api_key: uniqueValue("sk-a"),
      provider_a_org_id: "org-" + crypto.randomUUID().slice(0, 8),
      provider_b_key: `quote"backslash\\<tag>&amp;'${crypto.randomUUID()}`,
      provider_c_key: "x".repeat(4090) + crypto.randomUUID().slice(0, 6),
      provider_d_key: `\\u0000\\n%0a${crypto.randomUUID()}`,
      provider_e_key: `{"value":"${crypto.randomUUID()}"}`,
      provider_f_api_key: crypto.randomUUID().replaceAll("-", "").slice(0, 16),
    };
    for (const [type, value] of Object.entries(stored)) {
      await ok(put(app.fetch, creator.accessToken, type, value));
    }
    const anonymous = await (await list(app.fetch)).text();
    const mine = await (await list(app.fetch, creator.accessToken)).text();
    const body = JSON.parse(mine);
    // Each entry is its type, its time, its last use and at most the hint: "…" and the last four
    // characters.
    assert.deepEqual(
      body.secrets.map(({ updatedAt, ...entry }: { updatedAt: string }) => {
        assert.match(updatedAt, ISO_UTC);
        return entry;
      }),
      SECRET_TYPES.map((secretType) => {
        const chars = Array.from(stored[secretType]!);
        return chars.length >= 16
          ? { secretType, hint: `…${chars.slice(-4).join("")}`, lastUsedAt: null }
          : { secretType, lastUsedAt: null };
      }),
    );
    for (const value of Object.values(stored)) {
      for (const text of [anonymous, mine]) {
        assert.ok(!text.includes(value));
        assert.ok(!text.includes(JSON.stringify(value).slice(1, -1)));
      }
    }
    assert.deepEqual(JSON.parse(anonymous).secrets, []);
  },

  async "a hint never shows a space or an invisible character, even one saved before values had to be printable ASCII"(
    app,
  ) {
    const creator = await signIn(app);
    const kept = uniqueValue("sk-kept");
    for (const type of ["provider_b_key", "provider_c_key", "provider_d_key"]) {
      await ok(put(app.fetch, creator.accessToken, type, kept));
    }
    // Hints written when any well-formed text was accepted (the value's last four characters).
    for (
      const [type, hint] of [
        ["provider_c_key", "…ab\u3164\u00a0"],
        ["provider_d_key", "…\u2800\ufe0f\u034f\u180b"],
      ]
    ) {
      await app.database.db.query(
        "update public.user_secrets set hint = $3 where user_id = $1 and secret_type = $2",
        [creator.userId, type, hint],
      );
    }
    const listed = await ok(list(app.fetch, creator.accessToken));
    assert.deepEqual(
      listed.secrets.map(({ updatedAt: _, ...entry }: { updatedAt: string }) => entry),
      [
        { secretType: "provider_b_key", hint: `…${kept.slice(-4)}`, lastUsedAt: null },
        { secretType: "provider_c_key", lastUsedAt: null },
        { secretType: "provider_d_key", lastUsedAt: null },
      ],
    );
  },

  async "reveal needs the server token: without it or with a wrong one it is 403, with it 200"(
    app,
  ) {
    const creator = await signIn(app);
    const value = uniqueValue();
    await ok(put(app.fetch, creator.accessToken, "provider_e_key", value));
    const right = app.config.serverRevealToken;
    const flipped = (right[0] === "A" ? "B" : "A") + right.slice(1);
    for (
      const serverToken of [
        null,
        "",
        "wrong",
        flipped,
        right.slice(0, -1),
        `${right}x`,
        `${right.slice(0, 8)} ${right.slice(8)}`,
      ]
    ) {
      for (const path of ["/api/secrets/reveal", "/functions/v1/user-secrets/reveal"]) {
        const { text } = await expectError(
          call(app.fetch, "POST", path, { token: creator.accessToken, serverToken, body: {} }),
          403,
          "reveal_forbidden",
        );
        assert.ok(!text.includes(value));
        assert.ok(!text.includes(right));
      }
    }
    assert.deepEqual(await revealed(app, creator.accessToken, {}), { provider_e_key: value });
    // No body asks for every type; JSON null is a body, and not an object: refused, unrecorded.
    assert.deepEqual(await revealed(app, creator.accessToken), { provider_e_key: value });
    const { text: nullRefused } = await expectError(
      reveal(app, creator.accessToken, null),
      400,
      "invalid_request",
    );
    assert.ok(!nullRefused.includes(value));
    // The server token alone is not enough: the session is checked as well.
    await expectError(
      call(app.fetch, "POST", "/api/secrets/reveal", { serverToken: right, body: {} }),
      401,
      "missing_token",
    );
    await expectError(
      call(app.fetch, "POST", "/api/secrets/reveal", {
        token: "not-a-jwt",
        serverToken: right,
        body: {},
      }),
      401,
      "invalid_token",
    );
    // A failed reveal releases nothing and records nothing.
    const reveals = (await events(app, creator.userId)).filter((e) => e.action === "reveal");
    assert.deepEqual(reveals.map((e) => e.secret_types), [["provider_e_key"], ["provider_e_key"]]);
  },

  async "reveal with the server token but another creator's session returns only that creator's values"(
    app,
  ) {
    const alice = await signIn(app);
    const bob = await signIn(app);
    const aliceValue = uniqueValue("sk-alice");
    const bobValue = uniqueValue("sk-bob");
    await ok(put(app.fetch, alice.accessToken, "provider_f_api_key", aliceValue));
    await ok(put(app.fetch, bob.accessToken, "provider_f_api_key", bobValue));
    await ok(put(app.fetch, bob.accessToken, "provider_e_key", uniqueValue("sk-bob-e")));
    const response = await reveal(app, alice.accessToken, {
      secretTypes: ["provider_f_api_key", "provider_e_key"],
    });
    const text = await response.text();
    assert.equal(response.status, 200);
    assert.deepEqual(JSON.parse(text).secrets.map((s: { value: string }) => s.value), [aliceValue]);
    assert.ok(!text.includes(bobValue));
    const bobEvents = await events(app, bob.userId);
    assert.ok(!bobEvents.some((e) => e.action === "reveal"), "nothing revealed for Bob");
  },

  async "the database holds no plaintext"(app) {
    const creators = [await signIn(app), await signIn(app)];
    const values: string[] = [];
    for (const creator of creators) {
      for (const type of ["provider_a_api_key", "provider_b_key", "provider_a_org_id"] as const) {
        const value = type === "provider_a_org_id"
          ? `org-${crypto.randomUUID().slice(0, 6)}`
          : uniqueValue();
        values.push(value);
        await ok(put(app.fetch, creator.accessToken, type, value));
      }
      await revealed(app, creator.accessToken);
    }
    assertNoPlaintext(await dumpEverything(app), values);
    // And byte for byte in every ciphertext, not only in their text form.
    const rows = await app.database.db.query<{ ciphertext: Uint8Array; iv: Uint8Array }>(
      "select ciphertext, iv from public.user_secrets",
    );
    for (const row of rows) {
      const bytes = new TextDecoder("latin1").decode(new Uint8Array(row.ciphertext));
      for (const value of values) assert.ok(!bytes.includes(value));
    }
  },

  async "a ciphertext swapped between rows fails to decrypt"(app) {
    const db = app.database.db;
    const alice = await signIn(app);
    const bob = await signIn(app);
    const aliceB = uniqueValue("sk-alice-b");
    const aliceC = uniqueValue("sk-alice-c");
    const aliceE = uniqueValue("sk-alice-e");
    const bobB = uniqueValue("sk-bob-b");
    await ok(put(app.fetch, alice.accessToken, "provider_b_key", aliceB));
    await ok(put(app.fetch, alice.accessToken, "provider_c_key", aliceC));
    await ok(put(app.fetch, alice.accessToken, "provider_e_key", aliceE));
    await ok(put(app.fetch, bob.accessToken, "provider_b_key", bobB));

    // Someone with write access to the table copies Bob's ciphertext into Alice's row.
    const bobRow = await rawRow(app, bob.userId, "provider_b_key");
    await db.query(
      "update public.user_secrets set ciphertext = $3, iv = $4 where user_id = $1 and secret_type = $2",
      [alice.userId, "provider_b_key", bobRow.ciphertext, bobRow.iv],
    );
    const { body, text } = await expectError(
      reveal(app, alice.accessToken, { secretTypes: ["provider_b_key"] }),
      500,
      "decryption_failed",
    );
    assert.deepEqual(body.error.secretTypes, ["provider_b_key"]);
    for (const value of [aliceB, bobB]) assert.ok(!text.includes(value));

    // Within one creator, across types: c's ciphertext in e's row.
    const cRow = await rawRow(app, alice.userId, "provider_c_key");
    await db.query(
      "update public.user_secrets set ciphertext = $3, iv = $4 where user_id = $1 and secret_type = $2",
      [alice.userId, "provider_e_key", cRow.ciphertext, cRow.iv],
    );
    await expectError(
      reveal(app, alice.accessToken, { secretTypes: ["provider_e_key"] }),
      500,
      "decryption_failed",
    );
    // The untouched row still opens; Bob's own row too.
    assert.deepEqual(await revealed(app, alice.accessToken, { secretTypes: ["provider_c_key"] }), {
      provider_c_key: aliceC,
    });
    assert.deepEqual(await revealed(app, bob.accessToken), { provider_b_key: bobB });
  },

  async "a row under a key that is no longer configured fails clearly and spares the others"(app) {
    const creator = await signIn(app);
    const token = creator.accessToken;
    const oldValue = uniqueValue("sk-under-k1");
    await ok(put(app.fetch, token, "provider_b_key", oldValue));
    // The keyring is replaced by one that lacks the key the row was written under.
    const replacementKey = newKey("k9");
    const fetch = withKeyring(app, [replacementKey]);
    const newValue = uniqueValue("sk-under-k9");
    await ok(put(fetch, token, "provider_c_key", newValue));

    for (const body of [{ secretTypes: ["provider_b_key"] }, {}]) {
      const { body: error, text } = await expectError(
        reveal(app, token, body, fetch),
        500,
        "encryption_key_unavailable",
      );
      assert.match(error.error.message, /provider_b_key/);
      assert.deepEqual(error.error.secretTypes, ["provider_b_key"]);
      for (const secret of [oldValue, newValue, base64(replacementKey.key)]) {
        assert.ok(!text.includes(secret));
      }
      for (const spec of app.config.encryptionKeys) assert.ok(!text.includes(base64(spec.key)));
    }
    // Everything else keeps working.
    assert.deepEqual(await revealed(app, token, { secretTypes: ["provider_c_key"] }, fetch), {
      provider_c_key: newValue,
    });
    const listed = await ok(list(fetch, token));
    assert.deepEqual(listed.secrets.map((s: { secretType: string }) => s.secretType), [
      "provider_b_key",
      "provider_c_key",
    ]);
    await ok(put(fetch, token, "provider_e_key", "sk-e"));
    await ok(remove(fetch, token, "provider_e_key"));
    // Saving the type again puts it under the current key and heals it.
    const healed = uniqueValue("sk-healed");
    assert.equal((await ok(put(fetch, token, "provider_b_key", healed))).created, false);
    assert.deepEqual(await revealed(app, token, {}, fetch), {
      provider_b_key: healed,
      provider_c_key: newValue,
    });
  },

  async "missing, malformed, expired and revoked sessions are 401 on every operation"(app) {
    const creator = await signIn(app);
    const serverToken = app.config.serverRevealToken;
    const operations: [string, string, unknown][] = [
      ["PUT", "/api/secrets", { secretType: "provider_b_key", value: "sk-x" }],
      ["DELETE", "/api/secrets", { secretType: "provider_b_key" }],
      ["POST", "/api/secrets/reveal", {}],
    ];
    for (const [method, path, body] of operations) {
      await expectError(call(app.fetch, method, path, { body, serverToken }), 401, "missing_token");
    }

    const claims = decodeJwt(creator.accessToken);
    const identity = {
      userId: creator.userId,
      sessionId: claims.session_id as string,
      walletAddress: claims.wallet_address as string,
    };
    const expired = await serviceSigner(app.config, {
      ttl: 60,
      now: () => Date.now() - 3_600_000,
    }).issue(identity);
    const forged = await strangerSigner(app.config).issue(identity);
    const badTokens: [Record<string, string>, string][] = [
      [{ authorization: "Token abc" }, "invalid_token"],
      [bearer("not.a.jwt"), "invalid_token"],
      [bearer(forged.accessToken), "invalid_token"],
      [bearer(expired.accessToken), "token_expired"],
    ];
    for (const [headers, code] of badTokens) {
      await expectError(call(app.fetch, "GET", "/api/secrets", { headers }), 401, code);
      for (const [method, path, body] of operations) {
        await expectError(call(app.fetch, method, path, { headers, body, serverToken }), 401, code);
      }
    }

    assert.equal(
      (await call(app.fetch, "POST", "/api/auth/logout", { token: creator.accessToken })).status,
      204,
    );
    await expectError(list(app.fetch, creator.accessToken), 401, "session_revoked");
    for (const [method, path, body] of operations) {
      await expectError(
        call(app.fetch, method, path, { token: creator.accessToken, body, serverToken }),
        401,
        "session_revoked",
      );
    }
  },

  async "each bad input returns its 4xx code and never echoes the value"(app) {
    const { accessToken: token } = await signIn(app);
    const cases: [string, CallOptions, number, string][] = [
      [
        "no content type",
        {
          rawBody: '{"secretType":"provider_b_key","value":"v"}',
          headers: { "content-type": "text/plain" },
        },
        415,
        "unsupported_media_type",
      ],
      ["broken JSON", { rawBody: '{"secretType":' }, 400, "invalid_json"],
      [
        "a key named twice (the last would win)",
        {
          rawBody:
            '{"secretType":"provider_b_key","value":"sk-twice","secretType":"provider_c_key"}',
        },
        400,
        "invalid_json",
      ],
      ["no body", {}, 400, "invalid_request"],
      ["null", { body: null }, 400, "invalid_request"],
      ["an array", { body: [] }, 400, "invalid_request"],
      ["a string", { body: "provider_b_key" }, 400, "invalid_request"],
      [
        "an extra field",
        { body: { secretType: "provider_b_key", value: "sk-extra-field", note: "x" } },
        400,
        "invalid_request",
      ],
      [
        "a misspelt field",
        { body: { secret_type: "provider_b_key", value: "sk-misspelt" } },
        400,
        "invalid_request",
      ],
      [
        "an unknown type",
        { body: { secretType: "sk-unknown-type", value: "v" } },
        400,
        "invalid_secret_type",
      ],
      ["no type", { body: { value: "sk-no-type" } }, 400, "invalid_secret_type"],
      ["a numeric type", { body: { secretType: 7, value: "v" } }, 400, "invalid_secret_type"],
      [
        "the fields swapped",
        { body: { secretType: "sk-swapped-secret", value: "provider_b_key" } },
        400,
        "invalid_secret_type",
      ],
      ["no value", { body: { secretType: "provider_b_key" } }, 400, "invalid_value"],
      [
        "a numeric value",
        { body: { secretType: "provider_b_key", value: 12345 } },
        400,
        "invalid_value",
      ],
      [
        "a null value",
        { body: { secretType: "provider_b_key", value: null } },
        400,
        "invalid_value",
      ],
      [
        "an object value",
        { body: { secretType: "provider_b_key", value: { key: "sk-object" } } },
        400,
        "invalid_value",
      ],
      [
        "an empty value",
        { body: { secretType: "provider_b_key", value: "" } },
        400,
        "invalid_value",
      ],
      [
        "a blank value",
        { body: { secretType: "provider_b_key", value: "   " } },
        400,
        "invalid_value",
      ],
      [
        "a Unicode-blank value",
        { body: { secretType: "provider_b_key", value: "\u3000\u2003" } },
        400,
        "invalid_value",
      ],
      [
        "4,097 characters",
        { body: { secretType: "provider_b_key", value: "k".repeat(4097) } },
        400,
        "invalid_value",
      ],
      [
        "4,097 two-byte characters",
        { body: { secretType: "provider_b_key", value: "é".repeat(4097) } },
        400,
        "invalid_value",
      ],
      [
        "a line break",
        { body: { secretType: "provider_b_key", value: "sk-line\nbreak" } },
        400,
        "invalid_value",
      ],
      [
        "a tab",
        { body: { secretType: "provider_b_key", value: "sk-tab\there" } },
        400,
        "invalid_value",
      ],
      [
        "a NUL",
        { body: { secretType: "provider_b_key", value: "sk-nul\u0000" } },
        400,
        "invalid_value",
      ],
      [
        "a DEL",
        { body: { secretType: "provider_b_key", value: "sk-del\u007f" } },
        400,
        "invalid_value",
      ],
      [
        "a C1 control",
        { body: { secretType: "provider_b_key", value: "sk-c1\u0085" } },
        400,
        "invalid_value",
      ],
      [
        "a Unicode line separator",
        { body: { secretType: "provider_b_key", value: "\u2028sk-line-separator" } },
        400,
        "invalid_value",
      ],
      [
        "a Unicode paragraph separator",
        { body: { secretType: "provider_b_key", value: "sk-paragraph\u2029" } },
        400,
        "invalid_value",
      ],
      [
        "nothing but a zero-width space",
        { body: { secretType: "provider_b_key", value: "\u200b" } },
        400,
        "invalid_value",
      ],
      [
        "a byte-order mark",
        { body: { secretType: "provider_b_key", value: "\ufeffsk-byte-order-mark" } },
        400,
        "invalid_value",
      ],
      [
        "a soft hyphen",
        { body: { secretType: "provider_b_key", value: "sk-soft\u00adhyphen" } },
        400,
        "invalid_value",
      ],
      [
        "a lone surrogate",
        { rawBody: '{"secretType":"provider_b_key","value":"sk-lone\\ud800"}' },
        400,
        "invalid_value",
      ],
      // Provider keys and org IDs are printable ASCII: anything else is a paste's leftover, a
      // look-alike letter or an invisible character that a hint would show as if it were the key.
      ...([
        ["a Hangul filler (U+3164)", "sk-hangul\u3164filler-0123456789"],
        ["a variation selector (U+FE0F)", "sk-variation\ufe0f-0123456789"],
        ["a combining grapheme joiner (U+034F)", "sk-joiner\u034f-0123456789"],
        ["a Mongolian variation selector (U+180B)", "sk-mongolian\u180b-0123456789"],
        ["a braille blank (U+2800)", "sk-braille-0123456789\u2800"],
        ["a no-break space (U+00A0)", "sk-no-break\u00a0space-0123456789"],
        ["a space inside", "sk-space inside-0123456789"],
        ["a leading space", " sk-leading-space-0123456789"],
        ["a trailing space", "sk-trailing-space-0123456789 "],
        ["an ideographic space at the end", "sk-ideographic-0123456789\u3000"],
        ["a Cyrillic letter that looks Latin", "sk-cyr\u0456llic-0123456789"],
        ["an accented letter", "sk-caf\u00e9-0123456789"],
        ["an emoji", "sk-key-\u{1f511}-0123456789"],
        ["a Hangul filler alone", "\u3164"],
      ] as const).map(([label, value]): [string, CallOptions, number, string] => [
        label,
        { body: { secretType: "provider_b_key", value } },
        400,
        "invalid_value",
      ]),
      [
        "a body over 16 KiB",
        { body: { secretType: "provider_b_key", value: "k".repeat(17_000) } },
        413,
        "payload_too_large",
      ],
    ];
    for (const [label, options, status, code] of cases) {
      const { body, text } = await expectError(
        call(app.fetch, "PUT", "/api/secrets", { token, ...options }),
        status,
        code,
      );
      const sent = options.body as { value?: unknown; secretType?: unknown } | undefined;
      for (const field of [sent?.value, sent?.secretType]) {
        if (typeof field === "string" && field.startsWith("sk-")) {
          assert.ok(!text.includes(field), `${label}: echoed`);
        }
      }
      if (code === "invalid_secret_type") {
        assert.deepEqual(body.error.allowedSecretTypes, SECRET_TYPES, label);
      }
    }
    assert.deepEqual((await ok(list(app.fetch, token))).secrets, [], "nothing was stored");

    // The limit is exact; every printable ASCII character is accepted.
    const printable = Array.from({ length: 0x7e - 0x20 }, (_, i) => String.fromCharCode(0x21 + i));
    for (const value of ["k".repeat(4096), printable.join("")]) {
      await ok(put(app.fetch, token, "provider_b_key", value));
      assert.deepEqual(await revealed(app, token), { provider_b_key: value });
    }

    const deletes: [CallOptions, string][] = [
      [{}, "invalid_request"],
      [{ body: {} }, "invalid_secret_type"],
      [{ body: { secretType: "provider_z_key" } }, "invalid_secret_type"],
      [{ body: { secretType: "provider_b_key", value: "x" } }, "invalid_request"],
    ];
    for (const [options, code] of deletes) {
      await expectError(
        call(app.fetch, "DELETE", "/api/secrets", { token, ...options }),
        400,
        code,
      );
    }

    const serverToken = app.config.serverRevealToken;
    const reveals: [CallOptions, string][] = [
      [{ body: { secretTypes: ["provider_z_key"] } }, "invalid_secret_type"],
      [{ body: { secretTypes: "provider_b_key" } }, "invalid_request"],
      [{ body: { secretType: "provider_b_key" } }, "invalid_request"],
      [{ body: [] }, "invalid_request"],
    ];
    for (const [options, code] of reveals) {
      await expectError(
        call(app.fetch, "POST", "/api/secrets/reveal", { token, serverToken, ...options }),
        400,
        code,
      );
    }
    assert.deepEqual(await revealed(app, token, { secretTypes: [] }), {});

    await expectError(
      call(app.fetch, "PATCH", "/api/secrets", { token }),
      405,
      "method_not_allowed",
    );
    await expectError(
      call(app.fetch, "GET", "/api/secrets/reveal", { token, serverToken }),
      405,
      "method_not_allowed",
    );
  },

  async "audit rows exist for put, delete and reveal and contain no value"(app) {
    const creator = await signIn(app);
    const token = creator.accessToken;
    const values = [
      uniqueValue("sk-audit-1"),
      uniqueValue("sk-audit-2"),
      uniqueValue("sk-audit-3"),
    ];
    await ok(put(app.fetch, token, "provider_b_key", values[0]));
    await ok(put(app.fetch, token, "provider_b_key", values[1]));
    await ok(put(app.fetch, token, "provider_c_key", values[2]));
    await revealed(app, token);
    await ok(remove(app.fetch, token, "provider_b_key"));
    await expectError(remove(app.fetch, token, "provider_b_key"), 404, "secret_not_found");
    await expectError(
      call(app.fetch, "POST", "/api/secrets/reveal", { token, serverToken: "wrong", body: {} }),
      403,
      "reveal_forbidden",
    );

    const trail = await events(app, creator.userId);
    // One event per reveal, naming every type it read; the refused one read nothing. A second
    // save of a type is a replacement.
    assert.deepEqual(trail.map((e) => [e.action, e.secret_types]), [
      ["put", ["provider_b_key"]],
      ["replace", ["provider_b_key"]],
      ["put", ["provider_c_key"]],
      ["reveal", ["provider_b_key", "provider_c_key"]],
      ["delete", ["provider_b_key"]],
      ["reveal_refused", []],
    ]);
    assertNoPlaintext(trail.map((e) => e.row).join("\n"), values);
    // The creator can read its own trail.
    const own = await asCreator(
      app.database.db,
      sessionClaims(creator),
      (tx) => tx.query("select action from public.secret_events"),
    );
    assert.equal(own.length, trail.length);
  },

  async "a CORS preflight never admits the reveal header"(app) {
    for (const path of ["/api/secrets/reveal", "/functions/v1/user-secrets/reveal"]) {
      const response = await app.fetch(path, {
        method: "OPTIONS",
        headers: {
          origin: "https://app.example",
          "access-control-request-method": "POST",
          "access-control-request-headers": "authorization, content-type, x-service-server-secret",
          "x-service-server-secret": app.config.serverRevealToken,
        },
      });
      assert.equal(response.status, 204);
      assert.equal(await response.text(), "");
      const allowed = response.headers.get("access-control-allow-headers") ?? "";
      assert.ok(!allowed.toLowerCase().includes("x-service-server-secret"), allowed);
    }
  },
});

describeWithDatabase("vault key rotation", {
  async "rotation from k1 to k2 keeps every value revealable and leaves no row under k1"(app) {
    const db = app.database.db;
    const [k1] = app.config.encryptionKeys;
    assert.equal(k1.id, "k1");
    const creators: SignedIn[] = [await signIn(app), await signIn(app), await signIn(app)];
    const stored = new Map<SignedIn, Record<string, string>>();
    for (const creator of creators) {
      const values: Record<string, string> = {};
      for (const type of ["provider_a_api_key", "provider_b_key", "provider_f_api_key"]) {
        values[type] = uniqueValue(`sk-${type}`);
        await ok(put(app.fetch, creator.accessToken, type, values[type]));
      }
      stored.set(creator, values);
    }
    const rowsBefore = await db.query<
      { user_id: string; secret_type: string; updated_at: Date; hint: string }
    >(
      "select user_id, secret_type, updated_at, hint from public.user_secrets order by user_id, secret_type",
    );
    assert.equal(rowsBefore.length, 9);

    const k2 = newKey("k2");
    const keyring = createKeyring([k2, k1]);
    // Interrupted after its first batch: what it did is committed, and a second run continues.
    const stop = new AbortController();
    const first = await rotateKeys(db, keyring, {
      batchSize: 4,
      signal: stop.signal,
      onBatch: () => stop.abort(),
    });
    assert.equal(first.interrupted, true);
    assert.equal(first.rotated, 4);
    assert.deepEqual(first.rowsByKeyId, { k1: 5, k2: 4 });
    const second = await rotateKeys(db, keyring, { batchSize: 4 });
    assert.equal(second.interrupted, false);
    assert.equal(second.rotated, 5);
    assert.equal(second.batches, 2);
    assert.deepEqual(second.problems, []);
    assert.deepEqual(second.rowsByKeyId, { k2: 9 });
    const third = await rotateKeys(db, keyring);
    assert.equal(third.examined, 0);

    const rowsAfter = await db.query<
      { user_id: string; secret_type: string; updated_at: Date; hint: string; key_id: string }
    >(
      "select user_id, secret_type, updated_at, hint, key_id from public.user_secrets order by user_id, secret_type",
    );
    assert.ok(rowsAfter.every((row) => row.key_id === "k2"));
    // updated_at and hints are the creator's, untouched by a rotation.
    assert.deepEqual(
      rowsAfter.map(({ key_id: _, ...row }) => row),
      rowsBefore,
    );
    const rotations = await db.query<{ count: number }>(
      "select count(*)::int as count from public.secret_events where action = 'rotate'",
    );
    assert.equal(rotations[0].count, 9);

    // Every value opens with the new keyring, and even with k2 alone: k1 can be retired.
    for (const keys of [[k2, k1], [k2]]) {
      const fetch = withKeyring(app, keys);
      for (const creator of creators) {
        assert.deepEqual(await revealed(app, creator.accessToken, {}, fetch), stored.get(creator));
      }
    }
    assertNoPlaintext(await dumpEverything(app), [...stored.values()].flatMap(Object.values));
  },

  async "a row written under the old key behind the pass is rotated by another pass, or reported"(
    app,
  ) {
    const db = app.database.db;
    await db.query("delete from public.user_secrets");
    const creators = [await signIn(app), await signIn(app), await signIn(app)];
    for (const creator of creators) {
      await ok(put(app.fetch, creator.accessToken, "provider_b_key", uniqueValue("sk-b")));
    }
    const [first] = [...creators].sort((a, b) => a.userId.localeCompare(b.userId));
    const [k1] = app.config.encryptionKeys;
    const k2 = newKey("k2");
    const keyring = createKeyring([k2, k1]);
    // An instance still on the old keyring saves the first creator's row again, after the pass
    // has gone by it: once, then after every batch.
    const straggler = uniqueValue("sk-straggler");
    const saveBehind = async () => {
      await ok(put(app.fetch, first.accessToken, "provider_b_key", straggler));
    };
    let saves = 0;
    const caught = await rotateKeys(db, keyring, {
      batchSize: 1,
      onBatch: () => saves++ === 0 ? saveBehind() : undefined,
    });
    assert.equal(caught.passes, 2);
    assert.equal(caught.rotated, 4);
    assert.equal(caught.remaining, 0);
    assert.deepEqual(caught.rowsByKeyId, { k2: 3 });
    // The straggler's value, re-encrypted: k2 alone opens it.
    assert.deepEqual(await revealed(app, first.accessToken, {}, withKeyring(app, [k2])), {
      provider_b_key: straggler,
    });

    await saveBehind();
    const left = await rotateKeys(db, keyring, { batchSize: 1, onBatch: saveBehind });
    assert.equal(left.passes, MAX_PASSES);
    assert.equal(left.remaining, 1);
    assert.deepEqual(left.problems, []);
    assert.deepEqual(left.rowsByKeyId, { k1: 1, k2: 2 });
  },

  async "rotation steps over rows it cannot decrypt, names them and rotates the rest"(app) {
    const db = app.database.db;
    // Rotation covers the whole table: this step starts from an empty one to count its own rows.
    await db.query("delete from public.user_secrets");
    const creator = await signIn(app);
    const [k1] = app.config.encryptionKeys;
    const k2 = newKey("k2");
    const k3 = newKey("k3");
    const underK2 = withKeyring(app, [k2, k1]);
    const values = { provider_c_key: uniqueValue("sk-c"), provider_d_key: uniqueValue("sk-d") };
    await ok(put(underK2, creator.accessToken, "provider_c_key", values.provider_c_key));
    await ok(put(underK2, creator.accessToken, "provider_d_key", values.provider_d_key));
    // One row under a key id the new keyring does not hold at all.
    await db.query(
      "update public.user_secrets set key_id = 'k0' where user_id = $1 and secret_type = 'provider_d_key'",
      [creator.userId],
    );
    const report = await rotateKeys(db, createKeyring([k3, k2]), { batchSize: 1 });
    assert.equal(report.rotated, 1);
    assert.equal(report.skipped, 1);
    assert.deepEqual(report.problems, [{
      userId: creator.userId,
      secretType: "provider_d_key",
      keyId: "k0",
      reason: "encryption_key_unavailable",
    }]);
    assert.deepEqual(report.rowsByKeyId, { k0: 1, k3: 1 });
    // The unreadable row is a problem, not work left, and one pass saw everything.
    assert.equal(report.remaining, 0);
    assert.equal(report.passes, 1);
    const fetch = withKeyring(app, [k3]);
    assert.deepEqual(
      await revealed(app, creator.accessToken, { secretTypes: ["provider_c_key"] }, fetch),
      { provider_c_key: values.provider_c_key },
    );
  },
});
