/**
 * Wallet sign-in end to end through the /api proxy, on both engines, with real keys and real
 * signatures: the nonce route, the EIP-4361/EIP-191 proof in each of its failure modes, one-time
 * nonces under concurrency, sessions with refresh rotation, reuse detection and logout (a refresh's
 * retries and replays: refresh_retry_test.ts), the JWTs the vault refuses, rate limits,
 * interoperability with the `siwe` package and an `ethers` wallet, and logs that never hold a token
 * or signature.
 */
import assert from "node:assert/strict";
import { verifyMessage as ethersVerifyMessage, Wallet as EthersWallet } from "ethers";
import { decodeJwt, SignJWT } from "jose";
import { SiweMessage } from "siwe";
import { type Hex, hexToBigInt, recoverMessageAddress } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import { createSiweMessage } from "viem/siwe";
import { createServiceContext } from "../functions/_shared/context.ts";
import type { LogFields, Logger } from "../functions/_shared/http/log.ts";
import { hashRefreshToken } from "../functions/_shared/auth/refresh-tokens.ts";
import { serviceSigner, strangerSigner } from "./support/session-signers.ts";
import { generateNonce } from "../functions/_shared/auth/siwe.ts";
import { createLocalApp } from "../server/app.ts";
import { bearer, newWallet, signIn, TEST_ORIGIN, type TestApp } from "./support/app.ts";
import { base64url } from "./support/fuzz.ts";
import { messageFor, type NonceAnswer } from "./support/siwe.ts";
import { describeWithDatabase } from "./support/suite.ts";

/** The `iss` every session token carries (docs/api.md). */
const ISSUER = "wallet-proof";

type Fetch = (path: string, init?: RequestInit) => Promise<Response>;

interface SessionAnswer {
  access_token: string;
  token_type: string;
  expires_in: number;
  expires_at: number;
  refresh_token: string;
  user: { id: string; wallet_address: string };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
/** secp256k1's group order n. */
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

function post(fetch: Fetch, path: string, body?: unknown, headers: Record<string, string> = {}) {
  return fetch(path, {
    method: "POST",
    headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function ok<T = Record<string, unknown>>(response: Response | Promise<Response>): Promise<T> {
  const answered = await response;
  const text = await answered.text();
  assert.equal(answered.status, 200, text);
  return JSON.parse(text);
}

async function expectError(response: Response | Promise<Response>, status: number, code: string) {
  const answered = await response;
  const text = await answered.text();
  assert.equal(answered.status, status, text);
  const body = JSON.parse(text);
  assert.equal(body.error.code, code, text);
  assert.equal(typeof body.error.message, "string");
  return { response: answered, body };
}

function nonceFrom(fetch: Fetch, body?: unknown, headers?: Record<string, string>) {
  return ok<NonceAnswer>(post(fetch, "/api/auth/nonce", body, headers));
}

const prove = (
  fetch: Fetch,
  message: string,
  signature: string,
  headers?: Record<string, string>,
) => post(fetch, "/api/auth/wallet-proof", { message, signature }, headers);

/** A fresh nonce and the message for `account`, signed: a proof ready to send. */
async function freshProof(
  app: TestApp,
  account: PrivateKeyAccount,
  headers?: Record<string, string>,
) {
  const answer = await nonceFrom(app.fetch, { address: account.address }, headers);
  const message = answer.message!;
  return { answer, message, signature: await account.signMessage({ message }) };
}

async function nonceRow(app: TestApp, nonce: string) {
  const [row] = await app.database.db.query<{ used_at: Date | null; used_by: string | null }>(
    "select used_at, used_by from public.auth_nonces where nonce = $1",
    [nonce],
  );
  return row;
}

const secrets = (fetch: Fetch, token: string) => fetch("/api/secrets", { headers: bearer(token) });

/** The local app over the same database and configuration, logging to `log`. */
function appWithLogger(app: TestApp, log: Logger): Fetch {
  const context = createServiceContext(app.config, app.database.db, log, {
    ownOrigins: [TEST_ORIGIN],
  });
  const { handler } = createLocalApp(context);
  return (path, init = {}) => {
    const request = new Request(new URL(path, TEST_ORIGIN), init);
    request.headers.set("x-forwarded-for", "127.0.0.1");
    return handler(request);
  };
}

/**
 * Fixed one-minute windows: a burst that straddles a window's edge would be counted in two
 * windows. Waits, when the minute is nearly over, until the next one has begun.
 */
async function awayFromWindowEdge(needSeconds = 15) {
  const intoMinute = (Date.now() / 1000) % 60;
  if (intoMinute > 60 - needSeconds) {
    await new Promise((resolve) => setTimeout(resolve, (60 - intoMinute) * 1000 + 500));
  }
}

let ipCounter = 0;
/** A client address of its own, so rate-limit buckets of one behaviour never meet another's. */
const ownIp = () => ({
  "x-forwarded-for": `10.${Math.floor(++ipCounter / 250)}.${ipCounter % 250}.7`,
});

describeWithDatabase("wallet sign-in", {
  async "the nonce route answers every field a client needs, and the message only for an address"(
    app,
  ) {
    const before = Date.now();
    const answer = await nonceFrom(app.fetch);
    assert.deepEqual(Object.keys(answer).sort(), [
      "chainId",
      "domain",
      "expiresAt",
      "issuedAt",
      "nonce",
      "statement",
      "uri",
      "version",
    ]);
    assert.match(answer.nonce, /^[A-Za-z0-9]{16,}$/);
    assert.match(answer.issuedAt, ISO_UTC);
    assert.match(answer.expiresAt, ISO_UTC);
    const issuedAt = Date.parse(answer.issuedAt);
    assert.ok(Math.abs(issuedAt - before) < 5_000, "issuedAt is now");
    assert.equal(Date.parse(answer.expiresAt) - issuedAt, 600_000, "10 minutes by default");
    assert.equal(answer.domain, "127.0.0.1:54321");
    assert.equal(answer.uri, TEST_ORIGIN);
    assert.equal(answer.chainId, 1);
    assert.equal(answer.version, "1");
    assert.equal(
      answer.statement,
      "Sign in to wallet-vault-test. This signature proves you own this wallet; " +
        "it authorizes no transaction and costs no gas.",
    );
    // Stored, unused, with the expiry it announced.
    const [row] = await app.database.db.query<{ expires_at: Date; used_at: Date | null }>(
      "select expires_at, used_at from public.auth_nonces where nonce = $1",
      [answer.nonce],
    );
    assert.equal(row.expires_at.toISOString(), answer.expiresAt);
    assert.equal(row.used_at, null);
    // Every nonce is new.
    const more = await Promise.all(Array.from({ length: 20 }, () => nonceFrom(app.fetch)));
    assert.equal(new Set([answer, ...more].map((a) => a.nonce)).size, 21);

    // With an address (any case), the complete message, with the EIP-55 address: exactly what viem's
    // createSiweMessage and the siwe package build from the other fields.
    const account = newWallet();
    const withAddress = await nonceFrom(app.fetch, { address: account.address.toLowerCase() });
    assert.equal(withAddress.message, messageFor(withAddress, account.address));
    assert.ok(withAddress.message!.includes(`\n${account.address}\n`));
    const bySiwe = new SiweMessage({
      domain: withAddress.domain,
      address: account.address,
      statement: withAddress.statement,
      uri: withAddress.uri,
      version: withAddress.version,
      chainId: withAddress.chainId,
      nonce: withAddress.nonce,
      issuedAt: withAddress.issuedAt,
      expirationTime: withAddress.expiresAt,
    }).prepareMessage();
    assert.equal(withAddress.message, bySiwe);
    // A chain id of the caller's choosing (any chain is allowed by default), and an Origin header
    // that is not ours changes nothing about the domain.
    const onBase = await nonceFrom(
      app.fetch,
      { address: account.address, chainId: 8453 },
      { origin: "https://evil.example" },
    );
    assert.equal(onBase.chainId, 8453);
    assert.equal(onBase.domain, "127.0.0.1:54321");
    assert.ok(onBase.message!.includes("\nChain ID: 8453\n"));

    for (
      const bad of [
        { address: "0x1234" },
        { address: `${account.address}00` },
        { address: 42 },
        { chainId: 0 },
        { chainId: 1.5 },
        { chainId: "1" },
        { nonce: "mine" },
      ]
    ) {
      await expectError(post(app.fetch, "/api/auth/nonce", bad), 400, "invalid_request");
    }
    // The message names the limit as the schema has it: 0 itself is refused.
    const zero = await expectError(
      post(app.fetch, "/api/auth/nonce", { chainId: 0 }),
      400,
      "invalid_request",
    );
    assert.equal(zero.body.error.message, "chainId: must be greater than 0.");
    // No body is {}; JSON null is a body, and not an object.
    await ok(post(app.fetch, "/api/auth/nonce"));
    await expectError(post(app.fetch, "/api/auth/nonce", null), 400, "invalid_request");
  },

  async "the happy path: a session for the signed message, bound to the nonce"(app) {
    const account = newWallet();
    const { answer, message, signature } = await freshProof(app, account);
    const before = Math.floor(Date.now() / 1000);
    const response = await prove(app.fetch, message, signature);
    assert.equal(response.headers.get("cache-control"), "no-store");
    const session = await ok<SessionAnswer>(response);
    assert.deepEqual(Object.keys(session).sort(), [
      "access_token",
      "expires_at",
      "expires_in",
      "refresh_token",
      "token_type",
      "user",
    ]);
    assert.equal(session.token_type, "bearer");
    assert.equal(session.expires_in, 3600);
    assert.ok(Math.abs(session.expires_at - (before + 3600)) <= 5);
    assert.match(session.refresh_token, /^[A-Za-z0-9_-]{43}$/);
    assert.match(session.user.id, UUID);
    assert.deepEqual(Object.keys(session.user).sort(), ["id", "wallet_address"]);
    assert.equal(session.user.wallet_address, account.address);
    const claims = decodeJwt(session.access_token);
    assert.equal(claims.sub, session.user.id);
    assert.equal(claims.role, "authenticated");
    assert.equal(claims.aud, "authenticated");
    assert.equal(claims.exp, session.expires_at);
    assert.equal(claims.wallet_address, account.address);
    assert.match(String(claims.session_id), UUID);

    // The token opens the vault.
    const vault = await ok<{ secrets: unknown[] }>(secrets(app.fetch, session.access_token));
    assert.deepEqual(vault.secrets, []);
    // The nonce is spent, by this user; the refresh token is stored only as its hash.
    const nonce = await nonceRow(app, answer.nonce);
    assert.ok(nonce.used_at instanceof Date);
    assert.equal(nonce.used_by, session.user.id);
    const [stored] = await app.database.db.query<{ token_hash: Uint8Array; user_id: string }>(
      `select t.token_hash, s.user_id from public.auth_refresh_tokens t
         join public.auth_sessions s on s.id = t.session_id where s.id = $1`,
      [claims.session_id],
    );
    assert.equal(stored.user_id, session.user.id);
    assert.deepEqual(
      new Uint8Array(stored.token_hash),
      hashRefreshToken(session.refresh_token),
    );
    const [{ found }] = await app.database.db.query<{ found: number }>(
      `select count(*)::int as found from public.auth_refresh_tokens
        where encode(token_hash, 'escape') like '%' || $1 || '%'`,
      [session.refresh_token],
    );
    assert.equal(found, 0);
    // The function's own URL answers the same as the proxy.
    const direct = await freshProof(app, account);
    await ok(post(app.fetch, "/functions/v1/wallet-proof", {
      message: direct.message,
      signature: direct.signature,
    }));
  },

  async "the same wallet twice gets the same user id, in two different sessions"(app) {
    const account = newWallet();
    const first = await signIn(app, account);
    const second = await signIn(app, account);
    assert.equal(second.userId, first.userId);
    assert.notEqual(
      decodeJwt(second.accessToken).session_id,
      decodeJwt(first.accessToken).session_id,
    );
    assert.notEqual(second.accessToken, first.accessToken);
    assert.notEqual(second.refreshToken, first.refreshToken);
    await ok(secrets(app.fetch, first.accessToken));
    await ok(secrets(app.fetch, second.accessToken));
    const users = await app.database.db.query<{ id: string }>(
      "select id from public.wallet_users where wallet_address = $1",
      [account.address.toLowerCase()],
    );
    assert.deepEqual(users.map((u) => u.id), [first.userId]);
    // Someone else is someone else.
    assert.notEqual((await signIn(app)).userId, first.userId);
  },

  async "checksummed and lowercase addresses are one user; a lowercase message is not EIP-4361"(
    app,
  ) {
    const account = newWallet();
    const ids: string[] = [];
    for (const address of [account.address.toLowerCase(), account.address]) {
      const answer = await nonceFrom(app.fetch, { address });
      assert.ok(answer.message!.includes(`\n${account.address}\n`), "always EIP-55 in the message");
      const signature = await account.signMessage({ message: answer.message! });
      const session = await ok<SessionAnswer>(prove(app.fetch, answer.message!, signature));
      assert.equal(session.user.wallet_address, account.address);
      ids.push(session.user.id);
    }
    assert.equal(ids[0], ids[1]);
    const [row] = await app.database.db.query<{ wallet_address: string }>(
      "select wallet_address from public.wallet_users where id = $1",
      [ids[0]],
    );
    assert.equal(row.wallet_address, account.address.toLowerCase());
    // EIP-4361 wants the EIP-55 form, and wallets recognise a sign-in request (and warn about a
    // foreign domain) only then: a message with the lowercase address is refused, even signed.
    const answer = await nonceFrom(app.fetch, { address: account.address });
    const lowercase = answer.message!.replace(account.address, account.address.toLowerCase());
    await expectError(
      prove(app.fetch, lowercase, await account.signMessage({ message: lowercase })),
      400,
      "invalid_message",
    );
    assert.equal((await nonceRow(app, answer.nonce)).used_at, null, "the nonce is not spent");
  },

  async "another wallet's signature is signature_mismatch, and spends no nonce"(app) {
    const account = newWallet();
    const { answer, message, signature } = await freshProof(app, account);
    const thief = newWallet();
    await expectError(
      prove(app.fetch, message, await thief.signMessage({ message })),
      401,
      "signature_mismatch",
    );
    // The thief's own address in a message for our nonce, signed by the victim: still not a match.
    const swapped = messageFor(answer, thief.address);
    await expectError(
      prove(app.fetch, swapped, await account.signMessage({ message: swapped })),
      401,
      "signature_mismatch",
    );
    assert.equal((await nonceRow(app, answer.nonce)).used_at, null);
    await ok(prove(app.fetch, message, signature));
  },

  async "a message changed after signing is signature_mismatch"(app) {
    const account = newWallet();
    const { answer, message, signature } = await freshProof(app, account);
    const later = new Date(Date.parse(answer.expiresAt) + 86_400_000).toISOString();
    const tampered = [
      message.replace(`Expiration Time: ${answer.expiresAt}`, `Expiration Time: ${later}`),
      message.replace("Sign in to", "Sign in To"),
      message.replace(`URI: ${TEST_ORIGIN}`, `URI: ${TEST_ORIGIN}/settings`),
    ];
    for (const text of tampered) {
      assert.notEqual(text, message);
      await expectError(prove(app.fetch, text, signature), 401, "signature_mismatch");
    }
    // The nonce swapped for another fresh one: the signature is over the old text.
    const other = await nonceFrom(app.fetch);
    await expectError(
      prove(app.fetch, message.replace(answer.nonce, other.nonce), signature),
      401,
      "signature_mismatch",
    );
    await ok(prove(app.fetch, message, signature));
  },

  async "malformed signatures are invalid_signature; a high-s twin or any other bytes are no key's proof"(
    app,
  ) {
    const account = newWallet();
    const { answer, message, signature } = await freshProof(app, account);
    const r = signature.slice(2, 66);
    const s = hexToBigInt(`0x${signature.slice(66, 130)}`);
    const v = Number.parseInt(signature.slice(130), 16);
    // The malleable twin: (r, n - s) with the recovery bit flipped signs the same message for the
    // same key, as recovery shows; accepting it would let one signing be presented as two proofs.
    const highS = `0x${r}${(N - s).toString(16).padStart(64, "0")}${
      (v === 27 ? 28 : 27).toString(16)
    }`;
    assert.equal(
      await recoverMessageAddress({ message, signature: highS as Hex }),
      account.address,
    );
    // Bytes that are not the key's canonical signature could still be a contract wallet's
    // (ERC-1271 lets a contract accept anything, a high-s twin included), so they are asked of
    // the contract; with no RPC for the chain, as here, that is a mismatch without a network call.
    for (
      const other of [
        highS,
        signature.slice(0, 130), // 64 bytes
        `${signature}00`,
        `0x${r}${signature.slice(66, 130)}05`,
        `0x${"0".repeat(130)}`,
        `0x${r}${"0".repeat(64)}1b`,
      ]
    ) {
      await expectError(prove(app.fetch, message, other), 401, "signature_mismatch");
    }
    for (const bad of ["", "0x", signature.slice(2), `${signature}0`, `0x${"g".repeat(130)}`]) {
      await expectError(prove(app.fetch, message, bad), 401, "invalid_signature");
    }
    await expectError(
      post(app.fetch, "/api/auth/wallet-proof", { message, signature: 42 }),
      400,
      "invalid_request",
    );
    await expectError(
      post(app.fetch, "/api/auth/wallet-proof", {
        message,
        signature: "0x".padEnd(2 + 2 * 16 * 1024 + 2, "0"),
      }),
      400,
      "invalid_request",
    );
    assert.equal((await nonceRow(app, answer.nonce)).used_at, null);
    await ok(prove(app.fetch, message, signature));
  },

  async "unknown, expired and used nonces are refused, each with its own code"(app) {
    const account = newWallet();
    // Unknown: well formed, signed, for this site, but never issued here.
    const template = await nonceFrom(app.fetch);
    const invented = messageFor({ ...template, nonce: generateNonce() }, account.address);
    await expectError(
      prove(app.fetch, invented, await account.signMessage({ message: invented })),
      401,
      "nonce_unknown",
    );
    // Expired: the stored nonce's time is up although the message itself has not expired.
    const expiring = await freshProof(app, account);
    await app.database.db.query(
      "update public.auth_nonces set expires_at = now() - interval '1 second' where nonce = $1",
      [expiring.answer.nonce],
    );
    await expectError(
      prove(app.fetch, expiring.message, expiring.signature),
      401,
      "nonce_expired",
    );
    assert.equal((await nonceRow(app, expiring.answer.nonce)).used_at, null);
    // Used: a replay of a proof that worked.
    const used = await freshProof(app, account);
    await ok(prove(app.fetch, used.message, used.signature));
    await expectError(prove(app.fetch, used.message, used.signature), 401, "nonce_used");
    // …also through the function's own URL, with the message signed once more.
    await expectError(
      post(app.fetch, "/functions/v1/wallet-proof", {
        message: used.message,
        signature: await account.signMessage({ message: used.message }),
      }),
      401,
      "nonce_used",
    );
  },

  async "two concurrent proofs with one nonce: exactly one session, the other nonce_used"(app) {
    await concurrentProofs(app, 2);
  },

  async "fifty concurrent proofs with one nonce: exactly one session, 49 nonce_used"(app) {
    await concurrentProofs(app, 50);
  },

  async "a message for another domain or URI, or expired, early or from the future is refused"(
    app,
  ) {
    const account = newWallet();
    const now = Date.now();
    const cases: Array<[string, Partial<Parameters<typeof createSiweMessage>[0]>]> = [
      ["domain_not_allowed", { domain: "evil.example" }],
      ["domain_not_allowed", { domain: "127.0.0.1:54322" }],
      ["domain_not_allowed", { domain: "localhost:54321" }],
      ["domain_not_allowed", { scheme: "https" }],
      ["uri_not_allowed", { uri: "https://evil.example" }],
      ["uri_not_allowed", { uri: "http://127.0.0.1:54322/" }],
      ["uri_not_allowed", { uri: "https://127.0.0.1:54321/" }],
      ["message_expired", { expirationTime: new Date(now - 1000) }],
      ["message_not_yet_valid", { notBefore: new Date(now + 120_000) }],
      ["issued_in_future", { issuedAt: new Date(now + 10 * 60_000) }],
    ];
    const answer = await nonceFrom(app.fetch);
    for (const [code, overrides] of cases) {
      const message = messageFor(answer, account.address, overrides);
      await expectError(
        prove(app.fetch, message, await account.signMessage({ message })),
        401,
        code,
      );
    }
    // None of them spent the nonce; a clock a little ahead (within the skew) is fine.
    assert.equal((await nonceRow(app, answer.nonce)).used_at, null);
    const message = messageFor(answer, account.address, {
      issuedAt: new Date(now + 30_000),
      notBefore: new Date(now - 1000),
      uri: `${TEST_ORIGIN}/settings?from=wallet`,
    });
    await ok(prove(app.fetch, message, await account.signMessage({ message })));
    // Not EIP-4361 at all, or over the size limit.
    await expectError(
      prove(app.fetch, "Sign in please", await account.signMessage({ message: "Sign in please" })),
      400,
      "invalid_message",
    );
    await expectError(
      post(app.fetch, "/api/auth/wallet-proof", { message: "x".repeat(4097), signature: "0x" }),
      400,
      "invalid_request",
    );
  },

  async "refresh rotates the refresh token; reusing a spent one revokes the whole session"(app) {
    const signedIn = await signIn(app);
    const sessionId = decodeJwt(signedIn.accessToken).session_id;
    const rotated = await ok<SessionAnswer>(
      post(app.fetch, "/api/auth/refresh", { refresh_token: signedIn.refreshToken }),
    );
    assert.equal(rotated.token_type, "bearer");
    assert.equal(rotated.user.id, signedIn.userId);
    assert.equal(rotated.user.wallet_address, signedIn.account.address);
    assert.notEqual(rotated.refresh_token, signedIn.refreshToken);
    assert.equal(decodeJwt(rotated.access_token).session_id, sessionId, "the same session");
    await ok(secrets(app.fetch, rotated.access_token));
    // Rotation again, and the chain goes on.
    const again = await ok<SessionAnswer>(
      post(app.fetch, "/api/auth/refresh", { refresh_token: rotated.refresh_token }),
    );
    // The first (spent) token presented again: theft is assumed, the session ends for everyone.
    await expectError(
      post(app.fetch, "/api/auth/refresh", { refresh_token: signedIn.refreshToken }),
      401,
      "refresh_token_reused",
    );
    for (const token of [signedIn.accessToken, rotated.access_token, again.access_token]) {
      await expectError(secrets(app.fetch, token), 401, "session_revoked");
    }
    await expectError(
      post(app.fetch, "/api/auth/refresh", { refresh_token: again.refresh_token }),
      401,
      "session_revoked",
    );
    const [row] = await app.database.db.query<{ revoked_reason: string }>(
      "select revoked_reason from public.auth_sessions where id = $1",
      [sessionId],
    );
    assert.equal(row.revoked_reason, "refresh_token_reuse");
    // Another session of the same wallet is untouched.
    const other = await signIn(app, signedIn.account);
    await ok(secrets(app.fetch, other.accessToken));
    // Tokens never issued, and bodies that are not a refresh request.
    await expectError(
      post(app.fetch, "/api/auth/refresh", { refresh_token: "never-issued" }),
      401,
      "invalid_refresh_token",
    );
    await expectError(post(app.fetch, "/api/auth/refresh", {}), 400, "invalid_request");
    await expectError(post(app.fetch, "/api/auth/refresh"), 400, "invalid_request");
  },

  async "logout answers 204 and the old access token is refused from then on"(app) {
    const signedIn = await signIn(app);
    const otherDevice = await signIn(app, signedIn.account);
    await ok(secrets(app.fetch, signedIn.accessToken));
    // JSON null is a body, and not one logout takes: refused, and nothing is revoked.
    await expectError(
      app.fetch("/api/auth/logout", {
        method: "POST",
        headers: bearer(signedIn.accessToken, { "content-type": "application/json" }),
        body: "null",
      }),
      400,
      "invalid_request",
    );
    await ok(secrets(app.fetch, signedIn.accessToken));
    const response = await app.fetch("/api/auth/logout", {
      method: "POST",
      headers: bearer(signedIn.accessToken),
    });
    assert.equal(response.status, 204);
    assert.equal(response.headers.get("cache-control"), "no-store");
    assert.equal(await response.text(), "");
    await expectError(secrets(app.fetch, signedIn.accessToken), 401, "session_revoked");
    await expectError(
      app.fetch("/api/secrets", {
        method: "PUT",
        headers: bearer(signedIn.accessToken, { "content-type": "application/json" }),
        body: JSON.stringify({ secretType: "provider_b_key", value: "sk-after-logout-1234567" }),
      }),
      401,
      "session_revoked",
    );
    await expectError(
      post(app.fetch, "/api/auth/refresh", { refresh_token: signedIn.refreshToken }),
      401,
      "session_revoked",
    );
    await expectError(
      app.fetch("/api/auth/logout", { method: "POST", headers: bearer(signedIn.accessToken) }),
      401,
      "session_revoked",
    );
    // Only that session ended.
    await ok(secrets(app.fetch, otherDevice.accessToken));
    await expectError(app.fetch("/api/auth/logout", { method: "POST" }), 401, "missing_token");
    await expectError(
      app.fetch("/api/auth/logout", { method: "POST", headers: { authorization: "Basic x" } }),
      401,
      "invalid_token",
    );
  },

  async "logout with scope global ends every session of the creator, on every device, and no one else's"(
    app,
  ) {
    const phone = await signIn(app);
    const laptop = await signIn(app, phone.account);
    const lost = await signIn(app, phone.account);
    const stranger = await signIn(app);
    // A session that already ended by expiry keeps that as its end: logout does not rewrite it.
    const lapsed = await signIn(app, phone.account);
    await app.database.db.query(
      "update public.auth_sessions set expires_at = now() - interval '1 minute' where id = $1",
      [decodeJwt(lapsed.accessToken).session_id],
    );
    const response = await post(
      app.fetch,
      "/api/auth/logout",
      { scope: "global" },
      bearer(phone.accessToken),
    );
    assert.equal(response.status, 204);
    assert.equal(await response.text(), "");
    for (const device of [phone, laptop, lost]) {
      await expectError(secrets(app.fetch, device.accessToken), 401, "session_revoked");
      await expectError(
        post(app.fetch, "/api/auth/refresh", { refresh_token: device.refreshToken }),
        401,
        "session_revoked",
      );
    }
    const [{ live }] = await app.database.db.query<{ live: number }>(
      `select count(*)::int as live from public.auth_sessions
        where user_id = $1 and revoked_at is null and expires_at > now()`,
      [phone.userId],
    );
    assert.equal(live, 0);
    const [lapsedRow] = await app.database.db.query<{ revoked_reason: string | null }>(
      "select revoked_reason from public.auth_sessions where id = $1",
      [decodeJwt(lapsed.accessToken).session_id],
    );
    assert.equal(lapsedRow.revoked_reason, null);
    // Another creator is untouched: its token works and its refresh token still rotates.
    await ok(secrets(app.fetch, stranger.accessToken));
    await ok(post(app.fetch, "/api/auth/refresh", { refresh_token: stranger.refreshToken }));
    // The wallet can sign in again; through the function's own URL as well as /api.
    const again = await signIn(app, phone.account);
    await ok(secrets(app.fetch, again.accessToken));
    const viaFunction = await post(
      app.fetch,
      "/functions/v1/wallet-proof/logout",
      { scope: "global" },
      bearer(again.accessToken),
    );
    assert.equal(viaFunction.status, 204);
    await expectError(secrets(app.fetch, again.accessToken), 401, "session_revoked");
  },

  async "logout with scope local, or no body, ends only this session"(app) {
    const first = await signIn(app);
    const second = await signIn(app, first.account);
    const third = await signIn(app, first.account);
    const local = await post(
      app.fetch,
      "/api/auth/logout",
      { scope: "local" },
      bearer(first.accessToken),
    );
    assert.equal(local.status, 204);
    const empty = await post(app.fetch, "/api/auth/logout", {}, bearer(second.accessToken));
    assert.equal(empty.status, 204);
    await expectError(secrets(app.fetch, first.accessToken), 401, "session_revoked");
    await expectError(secrets(app.fetch, second.accessToken), 401, "session_revoked");
    await ok(secrets(app.fetch, third.accessToken));
    // An ended session cannot end the others.
    await expectError(
      post(app.fetch, "/api/auth/logout", { scope: "global" }, bearer(first.accessToken)),
      401,
      "session_revoked",
    );
    await ok(secrets(app.fetch, third.accessToken));
  },

  async "any other scope is 400 invalid_request and ends nothing"(app) {
    const signedIn = await signIn(app);
    for (
      const body of [
        { scope: "everywhere" },
        { scope: "GLOBAL" },
        { scope: "others" },
        { scope: 1 },
        { scope: null },
        { scope: "global", devices: "all" },
        ["global"],
        "global",
      ]
    ) {
      const { body: answer } = await expectError(
        post(app.fetch, "/api/auth/logout", body, bearer(signedIn.accessToken)),
        400,
        "invalid_request",
      );
      assert.doesNotMatch(answer.error.message, /everywhere|GLOBAL|others|devices/);
    }
    await ok(secrets(app.fetch, signedIn.accessToken));
  },

  async "tampered, expired, alg none and wrong-secret JWTs are refused with 401"(app) {
    const signedIn = await signIn(app);
    await ok(secrets(app.fetch, signedIn.accessToken));
    const claims = decodeJwt(signedIn.accessToken);
    const [header, , signature] = signedIn.accessToken.split(".");
    const json64 = (value: unknown) => base64url(JSON.stringify(value));
    const otherUser = await signIn(app);

    const tampered = `${header}.${json64({ ...claims, sub: otherUser.userId })}.${signature}`;
    const unsigned = `${json64({ alg: "none", typ: "JWT" })}.${json64(claims)}.`;
    const wrongSecret = (await strangerSigner(app.config).issue({
      userId: signedIn.userId,
      sessionId: String(claims.session_id),
      walletAddress: signedIn.account.address,
    })).accessToken;
    // The published key's own JSON as an HMAC secret: the classic algorithm confusion.
    const [publicKey] = app.config.sessionKeys.published;
    const otherAlgorithm = await new SignJWT(claims)
      .setProtectedHeader({ alg: "HS256", typ: "JWT", kid: publicKey.kid })
      .sign(new TextEncoder().encode(JSON.stringify(publicKey)));
    // Expired: our secret, a live session, but issued two hours ago for one hour.
    const expired = (await serviceSigner(app.config, {
      ttl: 3600,
      now: () => Date.now() - 7_200_000,
    }).issue({
      userId: signedIn.userId,
      sessionId: String(claims.session_id),
      walletAddress: signedIn.account.address,
    })).accessToken;
    assert.equal(decodeJwt(expired).iss, ISSUER);

    const cases: Array<[string, string, string]> = [
      ["tampered", tampered, "invalid_token"],
      ["alg none", unsigned, "invalid_token"],
      ["wrong secret", wrongSecret, "invalid_token"],
      ["HS512 with our secret", otherAlgorithm, "invalid_token"],
      ["expired", expired, "token_expired"],
      ["garbage", "not.a.jwt", "invalid_token"],
    ];
    for (const [, token, code] of cases) {
      await expectError(secrets(app.fetch, token), 401, code);
      await expectError(
        app.fetch("/api/auth/logout", { method: "POST", headers: bearer(token) }),
        401,
        code,
      );
    }
    // None of them ended the real session, or touched the other user's vault.
    await ok(secrets(app.fetch, signedIn.accessToken));
    await ok(secrets(app.fetch, otherUser.accessToken));
  },

  async "interoperability: a message built by the siwe package and signed by an ethers wallet"(
    app,
  ) {
    const wallet = EthersWallet.createRandom();
    const answer = await nonceFrom(app.fetch);
    const message = new SiweMessage({
      domain: answer.domain,
      address: wallet.address,
      statement: answer.statement,
      uri: answer.uri,
      version: answer.version,
      chainId: answer.chainId,
      nonce: answer.nonce,
      issuedAt: answer.issuedAt,
      expirationTime: answer.expiresAt,
    }).prepareMessage();
    const signature = await wallet.signMessage(message);
    const session = await ok<SessionAnswer>(prove(app.fetch, message, signature));
    assert.equal(session.user.wallet_address, wallet.address);
    await ok(secrets(app.fetch, session.access_token));
    // The siwe package's own choices parse too: no statement, its own timestamps without
    // milliseconds, a request id and resources.
    const second = await nonceFrom(app.fetch);
    const minimal = new SiweMessage({
      domain: second.domain,
      address: wallet.address,
      uri: `${second.uri}/settings`,
      version: "1",
      chainId: 10,
      nonce: second.nonce,
      issuedAt: new Date(Date.now() - 5000).toISOString().replace(/\.\d{3}Z$/, "Z"),
      requestId: "login-1",
      resources: [`${second.uri}/api/secrets`],
    }).prepareMessage();
    const again = await ok<SessionAnswer>(
      prove(app.fetch, minimal, await wallet.signMessage(minimal)),
    );
    assert.equal(again.user.id, session.user.id);
    // And the other way round: the server's message is one the siwe package parses to the nonce
    // answer's fields, and ethers recovers a viem signature over it.
    const account = newWallet();
    const served = await freshProof(app, account);
    const parsed = new SiweMessage(served.message);
    assert.equal(parsed.domain, served.answer.domain);
    assert.equal(parsed.address, account.address);
    assert.equal(parsed.nonce, served.answer.nonce);
    assert.equal(parsed.uri, served.answer.uri);
    assert.equal(parsed.chainId, served.answer.chainId);
    assert.equal(parsed.statement, served.answer.statement);
    assert.equal(parsed.issuedAt, served.answer.issuedAt);
    assert.equal(parsed.expirationTime, served.answer.expiresAt);
    assert.equal(ethersVerifyMessage(served.message, served.signature), account.address);
  },

  async "no token, refresh token, signature or nonce appears in any log line"(app) {
    const lines: string[] = [];
    const capture: Logger = {
      info: (event: string, fields?: LogFields) => lines.push(JSON.stringify({ event, ...fields })),
      error: (event: string, fields?: LogFields) =>
        lines.push(JSON.stringify({ event, ...fields })),
    };
    const fetch = appWithLogger(app, capture);
    const methods = ["log", "info", "warn", "error", "debug"] as const;
    const originals = methods.map((name) => console[name]);
    for (const name of methods) {
      console[name] = (...args: unknown[]) => lines.push(args.map(String).join(" "));
    }
    const secretsSeen: string[] = [];
    try {
      const account = newWallet();
      const answer = await nonceFrom(fetch, { address: account.address });
      const signature = await account.signMessage({ message: answer.message! });
      secretsSeen.push(answer.nonce, signature);
      // Failures first: a wrong signer, a bad signature, then the sign-in itself.
      const wrong = await newWallet().signMessage({ message: answer.message! });
      secretsSeen.push(wrong);
      await expectError(prove(fetch, answer.message!, wrong), 401, "signature_mismatch");
      await expectError(prove(fetch, answer.message!, `${signature}f`), 401, "invalid_signature");
      const session = await ok<SessionAnswer>(prove(fetch, answer.message!, signature));
      secretsSeen.push(session.access_token, session.refresh_token);
      await expectError(prove(fetch, answer.message!, signature), 401, "nonce_used");
      const rotated = await ok<SessionAnswer>(
        post(fetch, "/api/auth/refresh", { refresh_token: session.refresh_token }),
      );
      secretsSeen.push(rotated.access_token, rotated.refresh_token);
      const onward = await ok<SessionAnswer>(
        post(fetch, "/api/auth/refresh", { refresh_token: rotated.refresh_token }),
      );
      secretsSeen.push(onward.access_token, onward.refresh_token);
      // Reuse detection (logged by design: the event and the session id, nothing else).
      await expectError(
        post(fetch, "/api/auth/refresh", { refresh_token: session.refresh_token }),
        401,
        "refresh_token_reused",
      );
      const second = await freshProof(app, account);
      secretsSeen.push(second.answer.nonce, second.signature);
      const live = await ok<SessionAnswer>(prove(fetch, second.message, second.signature));
      secretsSeen.push(live.access_token, live.refresh_token);
      await ok(secrets(fetch, live.access_token));
      const out = await fetch("/api/auth/logout", {
        method: "POST",
        headers: bearer(live.access_token),
      });
      assert.equal(out.status, 204);
      await expectError(secrets(fetch, live.access_token), 401, "session_revoked");
      await expectError(secrets(fetch, `${live.access_token}x`), 401, "invalid_token");
    } finally {
      methods.forEach((name, index) => (console[name] = originals[index]));
    }
    assert.ok(
      lines.some((line) => line.includes("refresh_token_reused")),
      `the capture works: ${JSON.stringify(lines)}`,
    );
    const everything = lines.join("\n");
    for (const secret of secretsSeen) {
      for (const form of [secret, secret.slice(0, 24), secret.slice(-24)]) {
        assert.ok(!everything.includes(form), "a token, signature or nonce reached the log");
      }
    }
    // JWT pieces: no header.payload prefix and no signature part either.
    assert.ok(!/eyJ[A-Za-z0-9_-]{10,}/.test(everything), "something JWT-shaped was logged");
  },
});

/** `count` identical proofs at once: the conditional update lets exactly one through. */
async function concurrentProofs(app: TestApp, count: number) {
  const account = newWallet();
  const { answer, message, signature } = await freshProof(app, account);
  const responses = await Promise.all(
    Array.from({ length: count }, () => prove(app.fetch, message, signature)),
  );
  const bodies = await Promise.all(responses.map((r) => r.json()));
  const winners = responses.filter((r) => r.status === 200);
  assert.equal(winners.length, 1, JSON.stringify(bodies.filter((b) => !b.access_token)));
  const losers = bodies.filter((b) => b.error !== undefined);
  assert.equal(losers.length, count - 1);
  for (const [index, response] of responses.entries()) {
    if (response.status === 200) continue;
    assert.equal(response.status, 401);
    assert.equal(bodies[index].error.code, "nonce_used");
  }
  const [{ sessions }] = await app.database.db.query<{ sessions: number }>(
    `select count(*)::int as sessions from public.auth_sessions s
       join public.wallet_users u on u.id = s.user_id where u.wallet_address = $1`,
    [account.address.toLowerCase()],
  );
  assert.equal(sessions, 1);
  const [{ tokens }] = await app.database.db.query<{ tokens: number }>(
    `select count(*)::int as tokens from public.auth_refresh_tokens t
       join public.auth_sessions s on s.id = t.session_id
       join public.wallet_users u on u.id = s.user_id where u.wallet_address = $1`,
    [account.address.toLowerCase()],
  );
  assert.equal(tokens, 1);
  assert.equal((await nonceRow(app, answer.nonce)).used_by, bodies.find((b) => b.user).user.id);
}

describeWithDatabase("wallet sign-in with a chain allow-list", {
  async "nonces default to the first allowed chain; other chains are chain_not_allowed"(app) {
    const account = newWallet();
    const answer = await nonceFrom(app.fetch, { address: account.address });
    assert.equal(answer.chainId, 10);
    assert.equal((await nonceFrom(app.fetch, { chainId: 8453 })).chainId, 8453);
    const { body } = await expectError(
      post(app.fetch, "/api/auth/nonce", { chainId: 1 }),
      401,
      "chain_not_allowed",
    );
    assert.deepEqual(body.error.allowedChainIds, [10, 8453]);

    const onMainnet = messageFor(answer, account.address, { chainId: 1 });
    await expectError(
      prove(app.fetch, onMainnet, await account.signMessage({ message: onMainnet })),
      401,
      "chain_not_allowed",
    );
    const onBase = messageFor(answer, account.address, { chainId: 8453 });
    const session = await ok<SessionAnswer>(
      prove(app.fetch, onBase, await account.signMessage({ message: onBase })),
    );
    assert.equal(session.user.wallet_address, account.address);
  },
}, { ALLOWED_CHAIN_IDS: "10,8453" });

describeWithDatabase("wallet sign-in on an IPv6 origin", {
  async "the nonce names the IPv6 host as URL.host writes it, and the signed proof is accepted"(
    app,
  ) {
    const account = newWallet();
    const answer = await nonceFrom(app.fetch, { address: account.address });
    assert.equal(answer.domain, "[::1]:8080");
    assert.equal(answer.uri, "http://[::1]:8080");
    assert.ok(answer.message!.startsWith("[::1]:8080 wants you to sign in"));
    const session = await ok<SessionAnswer>(
      prove(app.fetch, answer.message!, await account.signMessage({ message: answer.message! })),
    );
    assert.equal(session.user.wallet_address, account.address);
    // The siwe package writes the same message from the answer's fields (viem's builder refuses
    // IP-literal domains); another port is another site.
    const next = await nonceFrom(app.fetch, { address: account.address });
    const fromFields = new SiweMessage({
      domain: next.domain,
      address: account.address,
      statement: next.statement,
      uri: next.uri,
      version: "1",
      chainId: next.chainId,
      nonce: next.nonce,
      issuedAt: next.issuedAt,
      expirationTime: next.expiresAt,
    }).prepareMessage();
    assert.equal(fromFields, next.message);
    const otherPort = fromFields.replace("[::1]:8080 wants", "[::1]:8081 wants");
    await expectError(
      prove(app.fetch, otherPort, await account.signMessage({ message: otherPort })),
      401,
      "domain_not_allowed",
    );
  },
}, { ALLOWED_ORIGINS: "http://[::1]:8080" });

describeWithDatabase("wallet sign-in rate limits", {
  async "nonces per client IP: the one over the limit is 429 with Retry-After"(app) {
    await awayFromWindowEdge();
    const ip = ownIp();
    for (let i = 0; i < 3; i++) await nonceFrom(app.fetch, {}, ip);
    const { response, body } = await expectError(
      post(app.fetch, "/api/auth/nonce", {}, ip),
      429,
      "rate_limited",
    );
    const retryAfter = Number(response.headers.get("retry-after"));
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `${retryAfter}`);
    assert.equal(body.error.retryAfterSeconds, retryAfter);
    // Through the function's own URL it is the same bucket; another client is not limited.
    await expectError(
      post(app.fetch, "/functions/v1/wallet-proof/nonce", {}, ip),
      429,
      "rate_limited",
    );
    await nonceFrom(app.fetch, {}, ownIp());
  },

  async "proof attempts per client IP: the one over the limit is 429, whatever the body"(app) {
    await awayFromWindowEdge();
    const ip = ownIp();
    for (let i = 0; i < 4; i++) {
      await expectError(prove(app.fetch, "not a message", "0x", ip), 400, "invalid_message");
    }
    // Even a perfect proof from that address waits; its nonce stays usable.
    const account = newWallet();
    const { answer, message, signature } = await freshProof(app, account, ownIp());
    const { response } = await expectError(
      prove(app.fetch, message, signature, ip),
      429,
      "rate_limited",
    );
    assert.ok(Number(response.headers.get("retry-after")) >= 1);
    assert.equal((await nonceRow(app, answer.nonce)).used_at, null);
    await ok(prove(app.fetch, message, signature, ownIp()));
  },

  async "proofs per wallet: only the wallet's own signatures count, so strangers cannot lock it out"(
    app,
  ) {
    await awayFromWindowEdge();
    const victim = newWallet();
    // Five strangers, each from its own address, try the victim's wallet without its key.
    for (let i = 0; i < 5; i++) {
      const { message } = await freshProof(app, victim, ownIp());
      await expectError(
        prove(app.fetch, message, await newWallet().signMessage({ message }), ownIp()),
        401,
        "signature_mismatch",
      );
    }
    // The owner still gets its two sign-ins a minute, from anywhere; the third waits.
    for (let i = 0; i < 2; i++) {
      const { message, signature } = await freshProof(app, victim, ownIp());
      await ok(prove(app.fetch, message, signature, ownIp()));
    }
    const third = await freshProof(app, victim, ownIp());
    const { response } = await expectError(
      prove(app.fetch, third.message, third.signature, ownIp()),
      429,
      "rate_limited",
    );
    assert.ok(Number(response.headers.get("retry-after")) >= 1);
    assert.equal((await nonceRow(app, third.answer.nonce)).used_at, null, "nonce kept for a retry");
    // Another wallet is not affected.
    const { message, signature } = await freshProof(app, newWallet(), ownIp());
    await ok(prove(app.fetch, message, signature, ownIp()));
  },

  async "replays of a used proof do not count against its wallet, so they cannot lock it out"(app) {
    await awayFromWindowEdge();
    const owner = newWallet();
    const used = await freshProof(app, owner, ownIp());
    await ok(prove(app.fetch, used.message, used.signature, ownIp()));
    // Someone who saw that proof sends it again and again, from several addresses.
    for (let i = 0; i < 3; i++) {
      await expectError(prove(app.fetch, used.message, used.signature, ownIp()), 401, "nonce_used");
    }
    // The owner's second sign-in of the minute (of two) still goes through.
    const fresh = await freshProof(app, owner, ownIp());
    await ok(prove(app.fetch, fresh.message, fresh.signature, ownIp()));
  },

  async "refresh attempts per client IP: the one over the limit is 429 and spends nothing"(app) {
    await awayFromWindowEdge();
    const ip = ownIp();
    // Guessing costs the database a look-up each time: four guesses, then the address waits.
    for (let i = 0; i < 4; i++) {
      await expectError(
        post(app.fetch, "/api/auth/refresh", { refresh_token: `guess-${i}` }, ip),
        401,
        "invalid_refresh_token",
      );
    }
    const { message, signature } = await freshProof(app, newWallet(), ownIp());
    const signedIn = await ok<{ refresh_token: string }>(
      prove(app.fetch, message, signature, ownIp()),
    );
    const { response } = await expectError(
      post(app.fetch, "/api/auth/refresh", { refresh_token: signedIn.refresh_token }, ip),
      429,
      "rate_limited",
    );
    assert.ok(Number(response.headers.get("retry-after")) >= 1);
    // The valid token was not spent: from another address it rotates, and as no reuse was seen,
    // the session goes on with its successor.
    const rotated = await ok<{ refresh_token: string }>(
      post(app.fetch, "/api/auth/refresh", { refresh_token: signedIn.refresh_token }, ownIp()),
    );
    assert.notEqual(rotated.refresh_token, signedIn.refresh_token);
    await ok(
      post(app.fetch, "/api/auth/refresh", { refresh_token: rotated.refresh_token }, ownIp()),
    );
  },
}, {
  RATE_LIMIT_NONCE_PER_MINUTE: "3",
  RATE_LIMIT_PROOF_PER_MINUTE: "4",
  RATE_LIMIT_PROOF_PER_ADDRESS_PER_MINUTE: "2",
  RATE_LIMIT_REFRESH_PER_MINUTE: "4",
});
