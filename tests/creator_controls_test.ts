/**
 * Creator controls (issue 33), on both engines, through the /api proxy with real signatures: a
 * fresh signature for sensitive acts (a nonce for one purpose and one session, spent once; a
 * sign-in nonce cannot serve, nor one purpose another; contract wallets through the same check
 * and RPC budgets as sign-in); when each key was last used and the creator's activity; the
 * sessions list and signing sessions out; the kill switch for live-run access; export and
 * account deletion.
 */
import assert from "node:assert/strict";
import type { PrivateKeyAccount } from "viem/accounts";
import type { ContractSignatureVerifier } from "../functions/_shared/chain/contract-signature-verifier.ts";
import { createServiceContext } from "../functions/_shared/context.ts";
import type { Database } from "../functions/_shared/db/db.ts";
import { SECRET_TYPES } from "../protocol/secret-types.ts";
import { silentLogger } from "./support/log.ts";
import { createLocalApp } from "../server/app.ts";
import { API_ROUTES } from "../functions/api/handler.ts";
import { asCreator } from "./support/as-creator.ts";
import { newWallet, type SignedIn, signIn, TEST_ORIGIN, type TestApp } from "./support/app.ts";
import { messageFor, type NonceAnswer } from "./support/siwe.ts";
import { describeWithDatabase } from "./support/suite.ts";

type Fetch = (path: string, init?: RequestInit) => Promise<Response>;
type Purpose = "unlock" | "sign_out_sessions" | "delete_account";

interface ConfirmNonce extends NonceAnswer {
  purpose: Purpose;
  resources?: string[];
}

interface Answer {
  status: number;
  // deno-lint-ignore no-explicit-any
  body: any;
  text: string;
}

/** A JSON request; the answer's status, body and text. */
async function send(
  fetch: Fetch,
  method: string,
  path: string,
  options: {
    token?: string;
    body?: unknown;
    headers?: Record<string, string>;
    serverToken?: string;
  } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  if (options.serverToken !== undefined) headers["x-service-server-secret"] = options.serverToken;
  const response = await fetch(path, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  return { status: response.status, body: text === "" ? null : JSON.parse(text), text };
}

function expectOk(answer: Answer, status = 200) {
  assert.equal(answer.status, status, answer.text);
  return answer.body;
}

function expectError(answer: Answer, status: number, code: string) {
  assert.equal(answer.status, status, answer.text);
  assert.equal(answer.body.error.code, code, answer.text);
}

/** POST /api/auth/confirm/nonce, with `token` as the session when one is given. */
const askConfirmNonce = (fetch: Fetch, init: { token?: string; body: unknown }) =>
  send(fetch, "POST", "/api/auth/confirm/nonce", init);

/** A confirmation nonce for `purpose`; a sign-out's names the sessions it ends (`sessionIds`). */
const confirmNonce = async (
  fetch: Fetch,
  token: string,
  purpose: Purpose,
  chainId?: number,
  sessionIds?: string[],
) =>
  expectOk(
    await askConfirmNonce(fetch, {
      token,
      body: {
        purpose,
        ...(chainId === undefined ? {} : { chainId }),
        ...(sessionIds === undefined ? {} : { sessionIds }),
      },
    }),
  ) as ConfirmNonce;

/**
 * A nonce for `purpose` asked by `creator`'s session (a sign-out's for `sessionIds`), and its
 * message signed by `signer`.
 */
async function freshSignature(
  fetch: Fetch,
  creator: SignedIn,
  purpose: Purpose,
  signer: PrivateKeyAccount = creator.account,
  sessionIds?: string[],
) {
  const answer = await confirmNonce(fetch, creator.accessToken, purpose, undefined, sessionIds);
  return {
    answer,
    message: answer.message,
    signature: await signer.signMessage({ message: answer.message }),
  };
}

const save = (app: TestApp, token: string, secretType: string, value: string) =>
  send(app.fetch, "PUT", "/api/secrets", { token, body: { secretType, value } });

const reveal = (app: TestApp, token: string, secretTypes?: string[]) =>
  send(app.fetch, "POST", "/api/secrets/reveal", {
    token,
    serverToken: app.config.serverRevealToken,
    body: secretTypes === undefined ? {} : { secretTypes },
  });

const unlock = (fetch: Fetch, token: string, proof: { message: string; signature: string }) =>
  send(fetch, "POST", "/api/secrets/unlock", {
    token,
    body: { message: proof.message, signature: proof.signature },
  });

const listed = async (app: TestApp, token: string) =>
  expectOk(await send(app.fetch, "GET", "/api/secrets", { token })).secrets as {
    secretType: string;
    hint?: string;
    updatedAt: string;
    lastUsedAt: string | null;
  }[];

async function trail(app: TestApp, userId: string) {
  return await app.database.db.query<
    { action: string; secret_types: string[]; reason: string | null; occurred_at: Date }
  >(
    "select action, secret_types, reason, occurred_at from public.secret_events where user_id = $1 order by id",
    [userId],
  );
}

async function nonceRow(app: TestApp, nonce: string) {
  const [row] = await app.database.db.query<
    {
      used_at: Date | null;
      used_by: string | null;
      address: string | null;
      session_id: string | null;
    }
  >("select used_at, used_by, address, session_id from public.auth_nonces where nonce = $1", [
    nonce,
  ]);
  return row;
}

const sessionIdOf = (token: string): string =>
  JSON.parse(atob(token.split(".")[1].replaceAll("-", "+").replaceAll("_", "/"))).session_id;

/** The local app over the same database, its every database call counted. */
function countingFetch(app: TestApp) {
  const db = app.database.db;
  const counter = { calls: 0 };
  const counted: Database = {
    engine: db.engine,
    query: (text, params) => (counter.calls++, db.query(text, params)),
    execScript: (script) => (counter.calls++, db.execScript(script)),
    transaction: (work) => (counter.calls++, db.transaction(work)),
    batch: (statements) => (counter.calls++, db.batch(statements)),
    queryOverlappingCommit: (statement, use) => (
      counter.calls++, db.queryOverlappingCommit(statement, use)
    ),
    close: () => db.close(),
  };
  const { handler } = createLocalApp(
    createServiceContext(app.config, counted, silentLogger, { ownOrigins: [TEST_ORIGIN] }),
  );
  const fetch: Fetch = (path, init = {}) => {
    const request = new Request(new URL(path, TEST_ORIGIN), init);
    request.headers.set("x-forwarded-for", "127.0.0.1");
    return handler(request);
  };
  return { fetch, counter };
}

describeWithDatabase("creator controls", {
  async "a fresh signature's nonce is for one purpose and the signed-in wallet, its message says what it authorizes"(
    app,
  ) {
    const creator = await signIn(app);
    const statements = new Set<string>();
    const sessionIds = [sessionIdOf(creator.accessToken)];
    for (const purpose of ["unlock", "sign_out_sessions", "delete_account"] as const) {
      const answer = await confirmNonce(
        app.fetch,
        creator.accessToken,
        purpose,
        undefined,
        purpose === "sign_out_sessions" ? sessionIds : undefined,
      );
      assert.equal(answer.purpose, purpose);
      assert.match(answer.nonce, /^[A-Za-z0-9]{32}$/);
      assert.equal(answer.domain, new URL(TEST_ORIGIN).host);
      assert.equal(answer.chainId, 1);
      // The message is what viem builds from the fields, for the session's wallet.
      assert.equal(
        answer.message,
        messageFor(answer, creator.account.address, { resources: answer.resources }),
      );
      assert.ok(answer.message.includes(creator.account.address));
      statements.add(answer.statement);
    }
    assert.equal(statements.size, 3, "each purpose has its own statement");
    assert.match([...statements][0], /^Unlock live-run access to the keys in your /);
    assert.match([...statements][2], /^Delete your .* account/);
    // Only a session may ask; a bad purpose is refused.
    expectError(
      await askConfirmNonce(app.fetch, { body: { purpose: "unlock" } }),
      401,
      "missing_token",
    );
    expectError(
      await askConfirmNonce(app.fetch, {
        token: creator.accessToken,
        body: { purpose: "sign_in" },
      }),
      400,
      "invalid_request",
    );
  },

  async "a sign-in nonce and signature cannot serve as a fresh signature, and stay usable for sign-in"(
    app,
  ) {
    const creator = await signIn(app);
    const signInNonce = expectOk(
      await send(app.fetch, "POST", "/api/auth/nonce", {
        body: { address: creator.account.address },
      }),
    );
    // The sign-in message itself, signed: its statement authorizes no act.
    const signInSignature = await creator.account.signMessage({ message: signInNonce.message });
    expectError(
      await unlock(app.fetch, creator.accessToken, {
        message: signInNonce.message,
        signature: signInSignature,
      }),
      401,
      "purpose_mismatch",
    );
    // The sign-in nonce under the unlock statement, signed: the nonce was not issued for it.
    const unlockStatement = (await confirmNonce(app.fetch, creator.accessToken, "unlock"))
      .statement;
    const forged = messageFor(
      { ...signInNonce, statement: unlockStatement },
      creator.account.address,
    );
    expectError(
      await unlock(app.fetch, creator.accessToken, {
        message: forged,
        signature: await creator.account.signMessage({ message: forged }),
      }),
      401,
      "purpose_mismatch",
    );
    assert.equal((await nonceRow(app, signInNonce.nonce)).used_at, null);
    const signedIn = await send(app.fetch, "POST", "/api/auth/wallet-proof", {
      body: { message: signInNonce.message, signature: signInSignature },
    });
    assert.equal(expectOk(signedIn).user.id, creator.userId);
  },

  async "a fresh signature's nonce cannot sign in, and stays usable for its act"(app) {
    const creator = await signIn(app);
    const answer = await confirmNonce(app.fetch, creator.accessToken, "unlock");
    const signInStatement = expectOk(
      await send(app.fetch, "POST", "/api/auth/nonce", { body: {} }),
    ).statement;
    // A sign-in message built around the unlock nonce, signed by the wallet itself.
    const asSignIn = messageFor(
      { ...answer, statement: signInStatement },
      creator.account.address,
    );
    expectError(
      await send(app.fetch, "POST", "/api/auth/wallet-proof", {
        body: {
          message: asSignIn,
          signature: await creator.account.signMessage({ message: asSignIn }),
        },
      }),
      401,
      "purpose_mismatch",
    );
    // And the unlock message as it was handed out, sent as a sign-in proof.
    expectError(
      await send(app.fetch, "POST", "/api/auth/wallet-proof", {
        body: {
          message: answer.message,
          signature: await creator.account.signMessage({ message: answer.message }),
        },
      }),
      401,
      "purpose_mismatch",
    );
    assert.equal((await nonceRow(app, answer.nonce)).used_at, null);
    expectOk(
      await unlock(app.fetch, creator.accessToken, {
        message: answer.message,
        signature: await creator.account.signMessage({ message: answer.message }),
      }),
    );
    assert.equal((await nonceRow(app, answer.nonce)).used_by, creator.userId);
  },

  async "one purpose cannot serve another: an unlock signature deletes no account"(app) {
    const creator = await signIn(app);
    const proof = await freshSignature(app.fetch, creator, "unlock");
    expectError(
      await send(app.fetch, "DELETE", "/api/account", {
        token: creator.accessToken,
        body: { message: proof.message, signature: proof.signature },
      }),
      401,
      "purpose_mismatch",
    );
    // The delete statement around the unlock nonce: the nonce decides.
    const deleteStatement = (await confirmNonce(app.fetch, creator.accessToken, "delete_account"))
      .statement;
    const forged = messageFor(
      { ...proof.answer, statement: deleteStatement },
      creator.account.address,
    );
    expectError(
      await send(app.fetch, "DELETE", "/api/account", {
        token: creator.accessToken,
        body: {
          message: forged,
          signature: await creator.account.signMessage({ message: forged }),
        },
      }),
      401,
      "purpose_mismatch",
    );
    expectOk(await send(app.fetch, "GET", "/api/secrets", { token: creator.accessToken }));
    assert.equal((await nonceRow(app, proof.answer.nonce)).used_at, null);
  },

  async "a fresh signature is spent once, by the session that asked, for the signed-in wallet only"(
    app,
  ) {
    const creator = await signIn(app);
    const proof = await freshSignature(app.fetch, creator, "unlock");
    expectOk(await unlock(app.fetch, creator.accessToken, proof));
    expectError(await unlock(app.fetch, creator.accessToken, proof), 401, "nonce_used");

    // Another session of the same wallet cannot send the first session's signature.
    const otherSession = await signIn(app, creator.account);
    const second = await freshSignature(app.fetch, creator, "unlock");
    expectError(await unlock(app.fetch, otherSession.accessToken, second), 401, "nonce_mismatch");

    // Another wallet's session cannot send it, nor can another wallet sign the creator's message.
    const stranger = await signIn(app);
    expectError(await unlock(app.fetch, stranger.accessToken, second), 401, "signature_mismatch");
    const signedByStranger = await freshSignature(app.fetch, creator, "unlock", stranger.account);
    expectError(
      await unlock(app.fetch, creator.accessToken, signedByStranger),
      401,
      "signature_mismatch",
    );
    // A message changed after signing (another chain) is not the wallet's signature.
    const changed = messageFor(second.answer, creator.account.address, { chainId: 10 });
    expectError(
      await unlock(app.fetch, creator.accessToken, {
        message: changed,
        signature: second.signature,
      }),
      401,
      "signature_mismatch",
    );
    // None of those spent it: the session that asked still can.
    expectOk(await unlock(app.fetch, creator.accessToken, second));

    // An ended session can neither ask nor spend.
    const ended = await signIn(app, creator.account);
    const late = await freshSignature(app.fetch, ended, "unlock");
    expectOk(await send(app.fetch, "POST", "/api/auth/logout", { token: ended.accessToken }), 204);
    expectError(await unlock(app.fetch, ended.accessToken, late), 401, "session_revoked");
    expectError(
      await askConfirmNonce(app.fetch, {
        token: ended.accessToken,
        body: { purpose: "unlock" },
      }),
      401,
      "session_revoked",
    );
  },

  async "the kill switch: a session locks live runs out, reveals are refused and recorded, the browser still lists, saves and deletes, and only a signature unlocks"(
    app,
  ) {
    const creator = await signIn(app);
    const token = creator.accessToken;
    const value = `sk-kill-switch-${crypto.randomUUID()}`;
    expectOk(await save(app, token, "provider_b_key", value));
    assert.deepEqual(
      expectOk(await send(app.fetch, "GET", "/api/secrets/lock", { token })),
      { locked: false, lockedAt: null },
    );
    const counting = countingFetch(app);
    const lockAnswer = await send(counting.fetch, "POST", "/api/secrets/lock", { token });
    const locked = expectOk(lockAnswer);
    assert.equal(locked.locked, true);
    assert.ok(!Number.isNaN(Date.parse(locked.lockedAt)));
    // Locking again keeps the first lock's time.
    assert.deepEqual(
      expectOk(await send(app.fetch, "POST", "/api/secrets/lock", { token })),
      locked,
    );
    assert.deepEqual(
      expectOk(await send(app.fetch, "GET", "/api/secrets/lock", { token })),
      locked,
    );

    // The locked reveal costs one database call, as a reveal does, and releases nothing.
    const before = counting.counter.calls;
    const refused = await send(counting.fetch, "POST", "/api/secrets/reveal", {
      token,
      serverToken: app.config.serverRevealToken,
      body: { secretTypes: ["provider_b_key"] },
    });
    expectError(refused, 423, "vault_locked");
    assert.equal(counting.counter.calls - before, 1);
    assert.ok(!refused.text.includes(value));
    expectError(await reveal(app, token), 423, "vault_locked");

    // The browser goes on: list, save, delete.
    expectOk(await save(app, token, "provider_c_key", `sk-still-saves-${crypto.randomUUID()}`));
    assert.deepEqual((await listed(app, token)).map((s) => s.secretType), [
      "provider_b_key",
      "provider_c_key",
    ]);
    expectOk(
      await send(app.fetch, "DELETE", "/api/secrets", {
        token,
        body: { secretType: "provider_c_key" },
      }),
    );

    // Unlocking needs a signature: the session alone, or a garbage body, is not enough.
    expectError(
      await send(app.fetch, "POST", "/api/secrets/unlock", { token }),
      400,
      "invalid_request",
    );
    expectError(await reveal(app, token), 423, "vault_locked");
    assert.deepEqual(
      expectOk(await unlock(app.fetch, token, await freshSignature(app.fetch, creator, "unlock"))),
      { locked: false },
    );
    const revealed = expectOk(await reveal(app, token, ["provider_b_key"]));
    assert.equal(revealed.secrets[0].value, value);

    const events = (await trail(app, creator.userId)).map((e) => [
      e.action,
      e.secret_types,
      e.reason,
    ]);
    // A reveal asking for nothing in particular names every type, in the registry's order.
    const everyType = [...SECRET_TYPES];
    assert.deepEqual(events, [
      ["put", ["provider_b_key"], null],
      ["lock", [], null],
      ["reveal_refused", ["provider_b_key"], "vault_locked"],
      ["reveal_refused", everyType, "vault_locked"],
      ["put", ["provider_c_key"], null],
      ["delete", ["provider_c_key"], null],
      ["reveal_refused", everyType, "vault_locked"],
      ["unlock", [], null],
      ["reveal", ["provider_b_key"], null],
    ]);
    // Another creator's reveals were never locked.
    const other = await signIn(app);
    expectOk(await save(app, other.accessToken, "provider_b_key", "sk-other-creator-value-1"));
    expectOk(await reveal(app, other.accessToken));
  },

  async "last used: null until a live run reveals the value, then that reveal's time; a replacement starts from never"(
    app,
  ) {
    const creator = await signIn(app);
    const token = creator.accessToken;
    expectOk(await save(app, token, "provider_b_key", `sk-last-used-${crypto.randomUUID()}`));
    expectOk(await save(app, token, "provider_c_key", `sk-never-used-${crypto.randomUUID()}`));
    assert.deepEqual((await listed(app, token)).map((s) => s.lastUsedAt), [null, null]);

    expectOk(await reveal(app, token, ["provider_b_key"]));
    expectOk(await reveal(app, token, ["provider_b_key"]));
    const reveals = (await trail(app, creator.userId)).filter((e) => e.action === "reveal");
    const [b, c] = await listed(app, token);
    assert.equal(b.lastUsedAt, reveals[1].occurred_at.toISOString());
    assert.equal(c.lastUsedAt, null, "a type the reveals did not read was not used");
    // A refused reveal is no use.
    expectOk(await send(app.fetch, "POST", "/api/secrets/lock", { token }));
    expectError(await reveal(app, token), 423, "vault_locked");
    assert.equal((await listed(app, token))[0].lastUsedAt, reveals[1].occurred_at.toISOString());
    expectOk(await unlock(app.fetch, token, await freshSignature(app.fetch, creator, "unlock")));

    // Replaced: the new value has not been used yet.
    expectOk(await save(app, token, "provider_b_key", `sk-replaced-${crypto.randomUUID()}`));
    assert.equal((await listed(app, token))[0].lastUsedAt, null);
    expectOk(await reveal(app, token));
    const latest = (await trail(app, creator.userId)).filter((e) => e.action === "reveal").at(-1)!;
    assert.deepEqual((await listed(app, token)).map((s) => s.lastUsedAt), [
      latest.occurred_at.toISOString(),
      latest.occurred_at.toISOString(),
    ]);
  },

  async "activity: newest first, a page at a time, each kind with its types, time and actor, never a value"(
    app,
  ) {
    const creator = await signIn(app);
    const token = creator.accessToken;
    const values = [`sk-first-${crypto.randomUUID()}`, `sk-second-${crypto.randomUUID()}`];
    expectOk(await save(app, token, "provider_b_key", values[0]));
    expectOk(await save(app, token, "provider_b_key", values[1]));
    expectOk(await save(app, token, "provider_a_org_id", "org-activity"));
    expectOk(await reveal(app, token));
    expectError(
      await send(app.fetch, "POST", "/api/secrets/reveal", {
        token,
        serverToken: "not-the-token",
        body: {},
      }),
      403,
      "reveal_forbidden",
    );
    // The operator's key rotation re-encrypts without moving updated_at.
    await app.database.db.query(
      "update public.user_secrets set key_id = key_id where user_id = $1 and secret_type = 'provider_b_key'",
      [creator.userId],
    );
    expectOk(
      await send(app.fetch, "DELETE", "/api/secrets", {
        token,
        body: { secretType: "provider_a_org_id" },
      }),
    );
    // An event written before saves were told from replacements reads as saved.
    await app.database.db.query(
      "insert into public.secret_events (user_id, secret_types, action) values ($1, '{provider_e_key}', 'put')",
      [creator.userId],
    );

    const all = expectOk(await send(app.fetch, "GET", "/api/secrets/activity", { token }));
    assert.equal(all.nextCursor, null);
    assert.deepEqual(
      all.events.map((
        e: { kind: string; secretTypes: string[]; actor: string; reason?: string },
      ) => [
        e.kind,
        e.secretTypes,
        e.actor,
        e.reason,
      ]),
      [
        ["saved", ["provider_e_key"], "browser", undefined],
        ["deleted", ["provider_a_org_id"], "browser", undefined],
        ["rotated", ["provider_b_key"], "operator", undefined],
        ["reveal_refused", [], "live_run", "reveal_token"],
        ["revealed", ["provider_a_org_id", "provider_b_key"], "live_run", undefined],
        ["saved", ["provider_a_org_id"], "browser", undefined],
        ["replaced", ["provider_b_key"], "browser", undefined],
        ["saved", ["provider_b_key"], "browser", undefined],
      ],
    );
    const times = all.events.map((e: { at: string }) => Date.parse(e.at));
    assert.deepEqual(times, [...times].sort((x, y) => y - x), "newest first");
    for (const value of values) assert.ok(!JSON.stringify(all).includes(value));

    // Pages of three, following the cursor, give the same events in the same order.
    const paged: unknown[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor === null ? "?limit=3" : `?limit=3&cursor=${cursor}`;
      const page = expectOk(
        await send(app.fetch, "GET", `/api/secrets/activity${query}`, { token }),
      );
      assert.ok(page.events.length <= 3);
      paged.push(...page.events);
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== null);
    assert.equal(pages, 3);
    assert.deepEqual(paged, all.events);

    // Refused: a page over the maximum, a made-up cursor, an unknown or repeated parameter.
    for (
      const query of [
        "?limit=201",
        "?limit=0",
        "?limit=ten",
        "?cursor=abc",
        "?cursor=65767433",
        "?cursor=6576743a2d31",
        // evt:9999999999999999999, past bigint: refused, not a database error.
        "?cursor=6576743a39393939393939393939393939393939393939",
        "?from=1",
        "?limit=1&limit=2",
      ]
    ) {
      expectError(
        await send(app.fetch, "GET", `/api/secrets/activity${query}`, { token }),
        400,
        "invalid_request",
      );
    }
    // Another creator's cursor names nothing of this creator's: an empty page, never its events.
    const first = expectOk(
      await send(app.fetch, "GET", "/api/secrets/activity?limit=1", { token }),
    );
    const stranger = await signIn(app);
    const foreign = expectOk(
      await send(app.fetch, "GET", `/api/secrets/activity?cursor=${first.nextCursor}`, {
        token: stranger.accessToken,
      }),
    );
    assert.deepEqual(foreign, { events: [], nextCursor: null });
    expectError(await send(app.fetch, "GET", "/api/secrets/activity"), 401, "missing_token");
  },

  async "sessions: each live one with when it began and was refreshed, its client cut short, the current one marked"(
    app,
  ) {
    const account = newWallet();
    const laptop = await signIn(app, account);
    // A second device, signing in with a long User-Agent holding characters a list must not show.
    const agent = `Mozilla/5.0 (X11; Linux x86_64)\u00e9\t  Chrome/131.0 ${"x".repeat(300)}`;
    const phoneNonce = expectOk(
      await send(app.fetch, "POST", "/api/auth/nonce", { body: { address: account.address } }),
    );
    const phone = expectOk(
      await send(app.fetch, "POST", "/api/auth/wallet-proof", {
        headers: { "user-agent": agent },
        body: {
          message: phoneNonce.message,
          signature: await account.signMessage({ message: phoneNonce.message }),
        },
      }),
    );
    const refreshed = expectOk(
      await send(app.fetch, "POST", "/api/auth/refresh", {
        body: { refresh_token: phone.refresh_token },
      }),
    );

    const { sessions } = expectOk(
      await send(app.fetch, "GET", "/api/auth/sessions", { token: laptop.accessToken }),
    );
    assert.equal(sessions.length, 2);
    const [newest, oldest] = sessions;
    assert.equal(newest.id, sessionIdOf(phone.access_token));
    assert.equal(oldest.id, sessionIdOf(laptop.accessToken));
    assert.deepEqual(sessions.map((s: { current: boolean }) => s.current), [false, true]);
    assert.equal(oldest.lastRefreshedAt, null);
    assert.ok(Date.parse(newest.lastRefreshedAt) >= Date.parse(newest.signedInAt));
    assert.equal(newest.client.length, 160);
    assert.match(newest.client, /^Mozilla\/5\.0 \(X11; Linux x86_64\) Chrome\/131\.0 x+$/);
    assert.equal(oldest.client, null, "the test client sends no User-Agent");
    assert.ok(Date.parse(oldest.expiresAt) > Date.now());
    assert.deepEqual(
      expectOk(
        await send(app.fetch, "GET", "/api/auth/sessions", {
          token: refreshed.access_token,
        }),
      ).sessions.map((s: { current: boolean }) => s.current),
      [true, false],
    );
    // Ended sessions are not listed; an ended session lists nothing.
    expectOk(
      await send(app.fetch, "POST", "/api/auth/logout", { token: refreshed.access_token }),
      204,
    );
    assert.equal(
      expectOk(await send(app.fetch, "GET", "/api/auth/sessions", { token: laptop.accessToken }))
        .sessions.length,
      1,
    );
    expectError(
      await send(app.fetch, "GET", "/api/auth/sessions", { token: refreshed.access_token }),
      401,
      "session_revoked",
    );
  },

  async "a sign-out's signature covers the sessions its message lists: signed for one session, it ends no other"(
    app,
  ) {
    const account = newWallet();
    const [laptop, phone, tablet] = [
      await signIn(app, account),
      await signIn(app, account),
      await signIn(app, account),
    ];
    const [phoneId, tabletId] = [sessionIdOf(phone.accessToken), sessionIdOf(tablet.accessToken)];
    // Shown to the owner as signing out the phone, say by whoever holds the laptop's session.
    const proof = await freshSignature(app.fetch, laptop, "sign_out_sessions", account, [phoneId]);
    assert.deepEqual(proof.answer.resources, [`urn:uuid:${phoneId}`]);
    assert.ok(proof.message.endsWith(`\nResources:\n- urn:uuid:${phoneId}`), proof.message);
    const signOut = (sessionIds: string[]) =>
      send(app.fetch, "POST", "/api/auth/sessions/sign-out", {
        token: laptop.accessToken,
        body: { message: proof.message, signature: proof.signature, sessionIds },
      });
    for (const other of [[tabletId], [phoneId, tabletId], [sessionIdOf(laptop.accessToken)]]) {
      expectError(await signOut(other), 401, "purpose_mismatch");
    }
    assert.equal((await nonceRow(app, proof.answer.nonce)).used_at, null);
    for (const live of [phone, tablet]) {
      expectOk(await send(app.fetch, "GET", "/api/secrets", { token: live.accessToken }));
    }
    // The sessions it lists, in any case and order, once each: signed out.
    assert.deepEqual(expectOk(await signOut([phoneId.toUpperCase(), phoneId])), { signedOut: 1 });
    expectError(
      await send(app.fetch, "GET", "/api/secrets", { token: phone.accessToken }),
      401,
      "session_revoked",
    );
    expectOk(await send(app.fetch, "GET", "/api/secrets", { token: tablet.accessToken }));
  },

  async "a sign-out's nonce is asked for the sessions it will end, and only a sign-out's names any"(
    app,
  ) {
    const creator = await signIn(app);
    const id = sessionIdOf(creator.accessToken);
    for (
      const body of [
        { purpose: "sign_out_sessions" },
        { purpose: "sign_out_sessions", sessionIds: [] },
        { purpose: "sign_out_sessions", sessionIds: ["not-a-session"] },
        { purpose: "sign_out_sessions", sessionIds: Array.from({ length: 51 }, () => id) },
        { purpose: "unlock", sessionIds: [id] },
        { purpose: "delete_account", sessionIds: [id] },
      ]
    ) {
      expectError(
        await askConfirmNonce(app.fetch, { token: creator.accessToken, body }),
        400,
        "invalid_request",
      );
    }
    // Fifty sessions fit one message.
    const fifty = Array.from({ length: 50 }, () => crypto.randomUUID());
    const answer = await confirmNonce(
      app.fetch,
      creator.accessToken,
      "sign_out_sessions",
      undefined,
      fifty,
    );
    assert.equal(answer.resources?.length, 50);
    const signature = await creator.account.signMessage({ message: answer.message });
    // Unknown ids: not found, whatever the signature covers.
    expectError(
      await send(app.fetch, "POST", "/api/auth/sessions/sign-out", {
        token: creator.accessToken,
        body: { message: answer.message, signature, sessionIds: fifty },
      }),
      404,
      "session_not_found",
    );
  },

  async "signing a session out takes a fresh signature, and another creator's session is out of reach"(
    app,
  ) {
    const account = newWallet();
    const laptop = await signIn(app, account);
    const lostPhone = await signIn(app, account);
    const stranger = await signIn(app);
    const lostId = sessionIdOf(lostPhone.accessToken);

    // The stranger names the creator's session: not found, and nothing ends.
    const strangerProof = await freshSignature(
      app.fetch,
      stranger,
      "sign_out_sessions",
      stranger.account,
      [lostId],
    );
    expectError(
      await send(app.fetch, "POST", "/api/auth/sessions/sign-out", {
        token: stranger.accessToken,
        body: {
          message: strangerProof.message,
          signature: strangerProof.signature,
          sessionIds: [lostId],
        },
      }),
      404,
      "session_not_found",
    );
    expectOk(await send(app.fetch, "GET", "/api/secrets", { token: lostPhone.accessToken }));
    // Nor can the stranger read it: row-level security lists only its own.
    const visible = await asCreator(
      app.database.db,
      {
        sub: stranger.userId,
        role: "authenticated",
        session_id: sessionIdOf(stranger.accessToken),
      },
      (tx) => tx.query<{ id: string }>("select id from public.auth_sessions"),
    );
    assert.deepEqual(visible.map((row) => row.id), [sessionIdOf(stranger.accessToken)]);

    // Without a signature the session alone cannot sign the other out.
    expectError(
      await send(app.fetch, "POST", "/api/auth/sessions/sign-out", {
        token: laptop.accessToken,
        body: { sessionIds: [lostId] },
      }),
      400,
      "invalid_request",
    );
    // A list naming the stranger's session too, signed: nothing ends, and the nonce is kept.
    const both = [lostId, sessionIdOf(stranger.accessToken)];
    const wider = await freshSignature(app.fetch, laptop, "sign_out_sessions", account, both);
    expectError(
      await send(app.fetch, "POST", "/api/auth/sessions/sign-out", {
        token: laptop.accessToken,
        body: { message: wider.message, signature: wider.signature, sessionIds: both },
      }),
      404,
      "session_not_found",
    );
    assert.equal((await nonceRow(app, wider.answer.nonce)).used_at, null);
    const proof = await freshSignature(app.fetch, laptop, "sign_out_sessions", account, [lostId]);
    assert.deepEqual(
      expectOk(
        await send(app.fetch, "POST", "/api/auth/sessions/sign-out", {
          token: laptop.accessToken,
          body: { message: proof.message, signature: proof.signature, sessionIds: [lostId] },
        }),
      ),
      { signedOut: 1 },
    );
    expectError(
      await send(app.fetch, "GET", "/api/secrets", { token: lostPhone.accessToken }),
      401,
      "session_revoked",
    );
    expectError(
      await send(app.fetch, "POST", "/api/auth/refresh", {
        body: { refresh_token: lostPhone.refreshToken },
      }),
      401,
      "session_revoked",
    );
    expectOk(await send(app.fetch, "GET", "/api/secrets", { token: laptop.accessToken }));
    expectOk(await send(app.fetch, "GET", "/api/secrets", { token: stranger.accessToken }));
  },

  async "export: the account, the lock, masked secrets and the activity, never a value"(app) {
    const creator = await signIn(app);
    const token = creator.accessToken;
    const value = `sk-export-${crypto.randomUUID()}`;
    expectOk(await save(app, token, "provider_b_key", value));
    expectOk(await reveal(app, token));
    const exported = await send(app.fetch, "GET", "/api/account/export", { token });
    const body = expectOk(exported);
    assert.ok(!exported.text.includes(value));
    assert.ok(!exported.text.includes(app.config.serverRevealToken));
    assert.deepEqual(body.creator, {
      id: creator.userId,
      walletAddress: creator.account.address,
      chainId: null,
      createdAt: body.creator.createdAt,
    });
    assert.deepEqual(body.liveRunAccess, { locked: false, lockedAt: null });
    assert.deepEqual(
      body.secrets.map((s: { secretType: string; hint: string }) => [s.secretType, s.hint]),
      [
        ["provider_b_key", `…${value.slice(-4)}`],
      ],
    );
    assert.notEqual(body.secrets[0].lastUsedAt, null);
    assert.deepEqual(body.activity.map((e: { kind: string }) => e.kind), ["revealed", "saved"]);
    assert.equal(body.activityNextCursor, null);
    expectError(await send(app.fetch, "GET", "/api/account/export"), 401, "missing_token");
  },

  async "deleting the account: secrets, sessions, limits and the wallet go; nonce records and the trail stay, unlinked; the wallet comes back as a new creator"(
    app,
  ) {
    const db = app.database.db;
    const account = newWallet();
    const creator = await signIn(app, account);
    const otherDevice = await signIn(app, account);
    const wallet = account.address.toLowerCase();
    expectOk(
      await save(app, creator.accessToken, "provider_b_key", `sk-leaving-${crypto.randomUUID()}`),
    );
    expectOk(await reveal(app, creator.accessToken));
    const proof = await freshSignature(app.fetch, creator, "delete_account");
    assert.deepEqual(
      expectOk(
        await send(app.fetch, "DELETE", "/api/account", {
          token: creator.accessToken,
          body: { message: proof.message, signature: proof.signature },
        }),
      ),
      { deleted: true },
    );

    for (const token of [creator.accessToken, otherDevice.accessToken]) {
      expectError(await send(app.fetch, "GET", "/api/secrets", { token }), 401, "session_revoked");
    }
    const count = async (sql: string, params: unknown[]) =>
      (await db.query<{ n: number }>(`select count(*)::int as n from ${sql}`, params))[0].n;
    assert.equal(await count("public.wallet_users where id = $1", [creator.userId]), 0);
    assert.equal(await count("public.user_secrets where user_id = $1", [creator.userId]), 0);
    assert.equal(await count("public.auth_sessions where user_id = $1", [creator.userId]), 0);
    assert.equal(
      await count("public.rate_limit_windows where strpos(bucket, $1) > 0", [creator.userId]),
      0,
    );
    // The wallet's windows are every client's: deleting an account does not reset its caps.
    assert.ok(
      await count("public.rate_limit_windows where strpos(bucket, $1) > 0", [wallet]) > 0,
    );
    // Every nonce this creator used is still recorded as used, by no one, for no address.
    const spent = await nonceRow(app, proof.answer.nonce);
    assert.notEqual(spent.used_at, null);
    assert.deepEqual([spent.used_by, spent.address, spent.session_id], [null, null, null]);
    assert.equal(
      await count("public.auth_nonces where address = $1 and used_at is not null", [wallet]),
      0,
    );
    assert.equal(
      await count("public.auth_nonces where used_at is not null and used_by is null", []) >= 3,
      true,
    );
    // The trail stays, under the former id, which no wallet maps to any more.
    assert.deepEqual((await trail(app, creator.userId)).map((e) => e.action), [
      "put",
      "reveal",
      "delete",
    ]);

    const again = await signIn(app, account);
    assert.notEqual(again.userId, creator.userId);
    assert.deepEqual(await listed(app, again.accessToken), []);
    assert.deepEqual(
      expectOk(await send(app.fetch, "GET", "/api/secrets/activity", { token: again.accessToken })),
      { events: [], nextCursor: null },
    );
  },
});

/** Stands in for a chain: the wallet `address` accepts `signature` (and nothing else) on `chainId`. */
function fakeChain(chainId: number, address: string, signature: string) {
  const checks: { chainId: number; address: string }[] = [];
  const verifier: ContractSignatureVerifier = {
    chainIds: [chainId],
    verify(check) {
      checks.push({ chainId: check.chainId, address: check.address });
      const hex = Array.from(check.signature, (b) => b.toString(16).padStart(2, "0")).join("");
      return Promise.resolve(check.address === address.toLowerCase() && `0x${hex}` === signature);
    },
  };
  return { verifier, checks };
}

describeWithDatabase("creator controls for a contract wallet", {
  async "a contract wallet's fresh signature is checked on its own chain, through sign-in's contract check and RPC budgets"(
    app,
  ) {
    const chainId = 31337;
    const wallet = newWallet().address; // stands for a contract's address: no one holds its key
    const walletSignature = `0x${"ab".repeat(96)}`;
    const chain = fakeChain(chainId, wallet, walletSignature);
    const { handler } = createLocalApp(
      createServiceContext(app.config, app.database.db, silentLogger, {
        ownOrigins: [TEST_ORIGIN],
        chainVerifier: chain.verifier,
      }),
    );
    const fetch: Fetch = (path, init = {}) => {
      const request = new Request(new URL(path, TEST_ORIGIN), init);
      request.headers.set("x-forwarded-for", "192.0.2.44");
      return handler(request);
    };
    const nonce = expectOk(
      await send(fetch, "POST", "/api/auth/nonce", { body: { address: wallet, chainId } }),
    );
    const session = expectOk(
      await send(fetch, "POST", "/api/auth/wallet-proof", {
        body: { message: nonce.message, signature: walletSignature },
      }),
    );
    const token = session.access_token;
    assert.equal(chain.checks.length, 1);

    // The message names the wallet's own chain, whichever chain is asked for.
    const answer = await confirmNonce(fetch, token, "unlock", 1);
    assert.equal(answer.chainId, chainId);
    expectOk(await send(fetch, "POST", "/api/secrets/lock", { token }));
    const rpcBuckets = async () =>
      (await app.database.db.query<{ bucket: string; hits: number }>(
        "select bucket, hits from public.rate_limit_windows where bucket like 'rpc:%' order by bucket",
      )).map((row) => `${row.bucket}=${row.hits}`);
    const countedBefore = await rpcBuckets();

    // A signature the wallet refuses: asked on the chain, counted, refused, the nonce unspent.
    expectError(
      await unlock(fetch, token, { message: answer.message, signature: `0x${"cd".repeat(96)}` }),
      401,
      "signature_mismatch",
    );
    assert.equal(chain.checks.length, 2);
    assert.deepEqual(chain.checks[1], { chainId, address: wallet.toLowerCase() });
    assert.notDeepEqual(await rpcBuckets(), countedBefore, "the check was counted");
    assert.equal((await nonceRow(app, answer.nonce)).used_at, null);

    assert.deepEqual(
      expectOk(await unlock(fetch, token, { message: answer.message, signature: walletSignature })),
      { locked: false },
    );
    assert.equal(chain.checks.length, 3);
    // Spent once: the contract check itself refuses it now, before any chain is asked.
    expectError(
      await unlock(fetch, token, { message: answer.message, signature: walletSignature }),
      401,
      "nonce_used",
    );
    assert.equal(chain.checks.length, 3);
  },

  async "a key's creator is not confirmed by a contract at its address"(app) {
    const chainId = 31337;
    const creator = await signIn(app);
    const contractSignature = `0x${"ef".repeat(80)}`;
    const chain = fakeChain(chainId, creator.account.address, contractSignature);
    const { handler } = createLocalApp(
      createServiceContext(app.config, app.database.db, silentLogger, {
        ownOrigins: [TEST_ORIGIN],
        chainVerifier: chain.verifier,
      }),
    );
    const fetch: Fetch = (path, init = {}) => {
      const request = new Request(new URL(path, TEST_ORIGIN), init);
      request.headers.set("x-forwarded-for", "192.0.2.45");
      return handler(request);
    };
    const answer = expectOk(
      await askConfirmNonce(fetch, {
        token: creator.accessToken,
        body: { purpose: "unlock", chainId },
      }),
    ) as ConfirmNonce;
    // The chain accepts it for the address, but the creator is the key, not that contract.
    expectError(
      await unlock(fetch, creator.accessToken, {
        message: answer.message,
        signature: contractSignature,
      }),
      401,
      "signature_mismatch",
    );
    assert.equal(chain.checks.length, 1);
    assert.equal((await nonceRow(app, answer.nonce)).used_at, null);
  },
});

describeWithDatabase("an ended session and the creator's budgets", {
  async "every route that takes a session refuses an ended one before it spends anything of the creator's"(
    app,
  ) {
    // A contract wallet, so the acts that need a fresh signature take the path that asks a chain.
    const chainId = 31337;
    const wallet = newWallet().address;
    const walletSignature = `0x${"ab".repeat(96)}`;
    const chain = fakeChain(chainId, wallet, walletSignature);
    const { handler } = createLocalApp(
      createServiceContext(app.config, app.database.db, silentLogger, {
        ownOrigins: [TEST_ORIGIN],
        chainVerifier: chain.verifier,
      }),
    );
    const fetch: Fetch = (path, init = {}) => {
      const request = new Request(new URL(path, TEST_ORIGIN), init);
      request.headers.set("x-forwarded-for", "192.0.2.46");
      return handler(request);
    };
    const nonce = expectOk(
      await send(fetch, "POST", "/api/auth/nonce", { body: { address: wallet, chainId } }),
    );
    const session = expectOk(
      await send(fetch, "POST", "/api/auth/wallet-proof", {
        body: { message: nonce.message, signature: walletSignature },
      }),
    );
    const token = session.access_token as string;
    const userId = session.user.id as string;
    expectOk(await save(app, token, "provider_b_key", "sk-ended-session-0123456789abcdef"));
    // Signed while the session was live, as a thief holding the device could have.
    const signed = async (purpose: Purpose, sessionIds?: string[]) => ({
      message: (await confirmNonce(fetch, token, purpose, undefined, sessionIds)).message,
      signature: walletSignature,
    });
    const proofs = {
      unlock: await signed("unlock"),
      sign_out_sessions: await signed("sign_out_sessions", [sessionIdOf(token)]),
      delete_account: await signed("delete_account"),
    };
    const sessionId = sessionIdOf(token);
    // Sign out everywhere; the access token stays unexpired.
    expectOk(
      await send(fetch, "POST", "/api/auth/logout", { token, body: { scope: "global" } }),
      204,
    );

    const creatorsBudgets = async () =>
      (await app.database.db.query<{ bucket: string; hits: number }>(
        `select bucket, hits from public.rate_limit_windows
          where strpos(bucket, $1) > 0 or strpos(bucket, $2) > 0 order by bucket`,
        [userId, wallet.toLowerCase()],
      )).map((row) => `${row.bucket}=${row.hits}`);
    const before = await creatorsBudgets();
    const checksBefore = chain.checks.length;

    const routes: [method: string, path: string, options: Parameters<typeof send>[3]][] = [
      ["GET", "/api/secrets", {}],
      ["PUT", "/api/secrets", {
        body: { secretType: "provider_c_key", value: "sk-0123456789abcdefgh" },
      }],
      ["DELETE", "/api/secrets", { body: { secretType: "provider_b_key" } }],
      ["POST", "/api/secrets/reveal", { serverToken: app.config.serverRevealToken, body: {} }],
      ["POST", "/api/auth/logout", { body: { scope: "global" } }],
      ["POST", "/api/auth/confirm/nonce", { body: { purpose: "unlock" } }],
      ["GET", "/api/auth/sessions", {}],
      [
        "POST",
        "/api/auth/sessions/sign-out",
        { body: { ...proofs.sign_out_sessions, sessionIds: [sessionId] } },
      ],
      ["GET", "/api/secrets/activity", {}],
      ["GET", "/api/secrets/lock", {}],
      ["POST", "/api/secrets/lock", {}],
      ["POST", "/api/secrets/unlock", { body: proofs.unlock }],
      ["DELETE", "/api/account", { body: proofs.delete_account }],
      ["GET", "/api/account/export", {}],
    ];
    // Every /api path but the three that take no session (a nonce, a proof, a refresh token).
    const sessionless = ["/auth/nonce", "/auth/wallet-proof", "/auth/refresh"];
    assert.deepEqual(
      [...new Set(routes.map(([, path]) => path.slice("/api".length)))].sort(),
      Object.keys(API_ROUTES).filter((path) => !sessionless.includes(path)).sort(),
    );
    for (const [method, path, options] of routes) {
      const answer = await send(fetch, method, path, { ...options, token });
      assert.equal(answer.status, 401, `${method} ${path}: ${answer.text}`);
      assert.equal(answer.body.error.code, "session_revoked", `${method} ${path}: ${answer.text}`);
    }
    // A wrong reveal token is refused for the token first: counted for the client, not the creator.
    const wrongToken = await send(fetch, "POST", "/api/secrets/reveal", {
      token,
      serverToken: `${app.config.serverRevealToken}x`,
      body: {},
    });
    assert.equal(wrongToken.status, 403, wrongToken.text);

    assert.deepEqual(await creatorsBudgets(), before, "a budget of the creator's was spent");
    assert.equal(chain.checks.length, checksBefore, "the wallet's chain was asked");
    assert.deepEqual((await trail(app, userId)).map((event) => event.action), ["put"]);
  },
});
