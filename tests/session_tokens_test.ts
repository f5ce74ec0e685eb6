/**
 * The one session-token verifier (functions/_shared/auth/session-tokens.ts), token side only: the
 * claims it issues, and every way a token must fail — tampered, expired, alg "none", another
 * algorithm, another secret, audience or issuer, missing claims. Whether the session is still live
 * is the database's answer, covered on both engines in wallet_proof_test.ts.
 */
import assert from "node:assert/strict";
import { decodeJwt, decodeProtectedHeader, SignJWT } from "jose";
import type { Queryable } from "../functions/_shared/db/db.ts";
import { ServiceError } from "../functions/_shared/http/errors.ts";
import { createSessionTokens } from "../functions/_shared/auth/session-tokens.ts";
import { base64url } from "./support/fuzz.ts";

/** The `iss` every session token carries (docs/api.md). */
const ISSUER = "wallet-proof";

const SECRET = "a-test-jwt-secret-of-more-than-32-characters";
const USER = "0b8f4c2e-5d7a-4e1b-9c3f-2a6d8e0f1b2c";
const SESSION = "7e1d3a5c-9b2f-4c6e-8a0d-1f3b5d7e9a2c";
const WALLET = "0x6e1423545095b980022b08b55705720456B43371";
const T0 = Date.parse("2026-11-22T10:00:00Z");

/** checkToken must decide from the token alone; any query would be a bug in this layer. */
const noDatabase: Queryable = {
  query: () => Promise.reject(new Error("checkToken must not query the database")),
  execScript: () => Promise.reject(new Error("unused")),
};

function tokens(options: { secret?: string; now?: () => number; ttl?: number } = {}) {
  return createSessionTokens({
    jwtSecret: options.secret ?? SECRET,
    accessTokenTtlSeconds: options.ttl ?? 3600,
    db: noDatabase,
    now: options.now ?? (() => T0),
  });
}

const identity = { userId: USER, sessionId: SESSION, walletAddress: WALLET };

async function rejectsCode(promise: Promise<unknown>, code: string, note?: string) {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof ServiceError, `expected a ServiceError, got ${error}`);
    assert.equal(error.code, code, note);
    assert.equal(error.status, 401);
    return;
  }
  assert.fail(`expected ${code}${note ? ` (${note})` : ""}, but it resolved`);
}

/** A token with these claims signed with `secret` (HS256 unless told). */
function sign(
  claims: Record<string, unknown>,
  options: { secret?: string; alg?: string } = {},
): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: options.alg ?? "HS256", typ: "JWT" })
    .sign(new TextEncoder().encode(options.secret ?? SECRET));
}

const validClaims = () => ({
  sub: USER,
  role: "authenticated",
  aud: "authenticated",
  iss: ISSUER,
  iat: T0 / 1000,
  exp: T0 / 1000 + 3600,
  session_id: SESSION,
  wallet_address: WALLET,
});

Deno.test("an issued token carries Supabase's claims and verifies to the same identity", async () => {
  const { accessToken, expiresAt } = await tokens().issue(identity);
  assert.deepEqual(decodeProtectedHeader(accessToken), { alg: "HS256", typ: "JWT" });
  assert.deepEqual(decodeJwt(accessToken), {
    role: "authenticated",
    session_id: SESSION,
    wallet_address: WALLET,
    sub: USER,
    aud: "authenticated",
    iss: ISSUER,
    iat: T0 / 1000,
    exp: T0 / 1000 + 3600,
  });
  assert.equal(expiresAt, T0 / 1000 + 3600);
  const session = await tokens().checkToken(accessToken);
  assert.equal(session.userId, USER);
  assert.equal(session.sessionId, SESSION);
  assert.equal(session.walletAddress, WALLET);
  assert.equal(session.expiresAt, expiresAt);
  assert.deepEqual(session.claims, {
    sub: USER,
    role: "authenticated",
    session_id: SESSION,
    wallet_address: WALLET,
  });
  // A token we signed by hand with the same claims is just as good (the format is the contract).
  await tokens().checkToken(await sign(validClaims()));
});

Deno.test("an expired token is token_expired, also after it was verified while fresh", async () => {
  let now = T0;
  const verifier = tokens({ now: () => now, ttl: 60 });
  const { accessToken } = await verifier.issue(identity);
  await verifier.checkToken(accessToken);
  now = T0 + 59_000;
  await verifier.checkToken(accessToken);
  now = T0 + 60_000; // exp is exclusive: no tolerance
  await rejectsCode(verifier.checkToken(accessToken), "token_expired");
  now = T0 + 86_400_000;
  await rejectsCode(verifier.checkToken(accessToken), "token_expired");
  await rejectsCode(
    tokens({ now: () => T0 + 3_600_000 }).checkToken(accessToken),
    "token_expired",
  );
});

Deno.test("tampered tokens are invalid_token: payload, header or signature changed", async () => {
  const { accessToken } = await tokens().issue(identity);
  const [header, payload, signature] = accessToken.split(".");
  const otherUser = base64url(
    JSON.stringify({ ...decodeJwt(accessToken), sub: "11111111-1111-4111-8111-111111111111" }),
  );
  const flip = (text: string, at: number) =>
    text.slice(0, at) + (text[at] === "A" ? "B" : "A") + text.slice(at + 1);
  const cases: Record<string, string> = {
    "another user in the payload": `${header}.${otherUser}.${signature}`,
    "one payload character": `${header}.${flip(payload, 10)}.${signature}`,
    "one signature character": `${header}.${payload}.${flip(signature, 5)}`,
    "no signature": `${header}.${payload}.`,
    "signature of another token": `${header}.${payload}.${
      (await tokens().issue({ ...identity, sessionId: USER })).accessToken.split(".")[2]
    }`,
    "two parts": `${header}.${payload}`,
    "not a JWT": "not-a-token",
    "empty": "",
  };
  for (const [why, token] of Object.entries(cases)) {
    await rejectsCode(tokens().checkToken(token), "invalid_token", why);
  }
});

Deno.test('alg "none", another algorithm and another secret are invalid_token', async () => {
  const claims = validClaims();
  const unsigned = `${base64url(JSON.stringify({ alg: "none", typ: "JWT" }))}.${
    base64url(JSON.stringify(claims))
  }.`;
  await rejectsCode(tokens().checkToken(unsigned), "invalid_token", "alg none");
  // "none" with a signature part left on, and with a lowercase spelling.
  const { accessToken } = await tokens().issue(identity);
  await rejectsCode(
    tokens().checkToken(`${unsigned}${accessToken.split(".")[2]}`),
    "invalid_token",
    "alg none with a signature",
  );
  await rejectsCode(
    tokens().checkToken(
      `${base64url(JSON.stringify({ alg: "None" }))}.${base64url(JSON.stringify(claims))}.`,
    ),
    "invalid_token",
    "alg None",
  );
  // Same secret, another HMAC: algorithm switching is refused, not just unknown keys.
  await rejectsCode(tokens().checkToken(await sign(claims, { alg: "HS512" })), "invalid_token");
  await rejectsCode(tokens().checkToken(await sign(claims, { alg: "HS384" })), "invalid_token");
  await rejectsCode(
    tokens().checkToken(await sign(claims, { secret: `${SECRET}-but-another` })),
    "invalid_token",
    "wrong secret",
  );
  // The mirror image: our token checked by a verifier with another secret.
  await rejectsCode(
    tokens({ secret: "another-secret-of-more-than-32-characters!!" }).checkToken(accessToken),
    "invalid_token",
  );
});

Deno.test("tokens for another audience or issuer, or without our claims, are invalid_token", async () => {
  const cases: Record<string, Record<string, unknown>> = {
    "audience anon": { aud: "anon" },
    "no audience": { aud: undefined },
    "another issuer": { iss: "supabase" },
    "role service_role": { role: "service_role" },
    "no session_id": { session_id: undefined },
    "session_id not a uuid": { session_id: "1" },
    "sub not a uuid": { sub: "admin" },
    "no sub": { sub: undefined },
    "no exp": { exp: undefined },
    "no iat": { iat: undefined },
    "no wallet_address": { wallet_address: undefined },
  };
  for (const [why, change] of Object.entries(cases)) {
    const claims: Record<string, unknown> = { ...validClaims(), ...change };
    for (const key of Object.keys(claims)) if (claims[key] === undefined) delete claims[key];
    await rejectsCode(tokens().checkToken(await sign(claims)), "invalid_token", why);
  }
});
