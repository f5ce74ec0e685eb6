/**
 * The session-token verifier (functions/_shared/auth/session-tokens.ts) and signer
 * (session-signer.ts), token side only: the claims and header issued, and every way a token must
 * fail — tampered, expired, alg "none", an HS256 token signed with the public key as its secret,
 * an unknown or removed kid, another curve, a key carried in the header, another audience or
 * issuer, missing claims — then rotation between keys and the migration away from the legacy
 * HS256 secret, neither of which signs anyone out. Whether the session is still live is the
 * database's answer, covered on both engines in wallet_proof_test.ts.
 */
import assert from "node:assert/strict";
import { decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, SignJWT } from "jose";
import type { Queryable } from "../functions/_shared/db/db.ts";
import { ServiceError } from "../functions/_shared/http/errors.ts";
import { createSessionTokens } from "../functions/_shared/auth/session-tokens.ts";
import { createSessionSigner } from "../functions/_shared/auth/session-signer.ts";
import {
  parseSigningKeys,
  type PublicJwk,
  type SessionKeys,
} from "../functions/_shared/auth/session-keys.ts";
import { generateDevSigningKey } from "../server/dev-keys.ts";
import { base64url } from "./support/fuzz.ts";

const ISSUER = "https://abcdefghijklmnopqrst.supabase.co/auth/v1";
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

type Jwk = Record<string, unknown>;
const FIRST = generateDevSigningKey();
const SECOND = generateDevSigningKey();

/** The session keys configuration would read from these private JWKs (the first signs). */
function keysOf(jwks: readonly Jwk[], legacy: "sign" | "verify" | null = null): SessionKeys {
  const problems: string[] = [];
  const parsed = jwks.length === 0 ? null : parseSigningKeys(JSON.stringify(jwks), problems);
  assert.deepEqual(problems, []);
  if (legacy === "sign") {
    return {
      issuer: ISSUER,
      signing: { alg: "HS256", secret: SECRET },
      published: parsed?.published ?? [],
      legacySecret: SECRET,
    };
  }
  return {
    issuer: ISSUER,
    signing: parsed!.signing,
    published: parsed!.published,
    legacySecret: legacy === "verify" ? SECRET : null,
  };
}

interface Service {
  issue: ReturnType<typeof createSessionSigner>["issue"];
  checkToken: ReturnType<typeof createSessionTokens>["checkToken"];
}

/** wallet-proof's signer and a verifier of the same configuration, as one process has them. */
function service(
  keys: SessionKeys = keysOf([FIRST]),
  options: { now?: () => number; ttl?: number } = {},
): Service {
  const now = options.now ?? (() => T0);
  const signer = createSessionSigner({ keys, accessTokenTtlSeconds: options.ttl ?? 3600, now });
  const verifier = createSessionTokens({
    issuer: keys.issuer,
    publicKeys: keys.published,
    legacySecret: keys.legacySecret,
    db: noDatabase,
    now,
  });
  return { issue: signer.issue, checkToken: verifier.checkToken };
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

/** A token with these claims and header signed with `jwk`'s private key (ES256). */
async function signWith(jwk: Jwk, claims: Jwk, header: Jwk = {}): Promise<string> {
  const { kty, crv, x, y, d } = jwk;
  const key = await crypto.subtle.importKey(
    "jwk",
    { kty, crv, x, y, d } as JsonWebKey,
    { name: "ECDSA", namedCurve: "P-256" },
    false,
    ["sign"],
  );
  return new SignJWT(claims)
    .setProtectedHeader({ alg: "ES256", typ: "JWT", kid: jwk.kid as string, ...header })
    .sign(key);
}

/** An HS256 token under `secret`, with `header` added. */
function signHs256(claims: Jwk, secret: string | Uint8Array, header: Jwk = {}): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: "HS256", typ: "JWT", ...header })
    .sign(typeof secret === "string" ? new TextEncoder().encode(secret) : secret);
}

Deno.test("an issued token is ES256 with the key's kid, carries Supabase's claims and verifies", async () => {
  const { accessToken, expiresAt } = await service().issue(identity);
  assert.deepEqual(decodeProtectedHeader(accessToken), {
    alg: "ES256",
    kid: FIRST.kid,
    typ: "JWT",
  });
  assert.deepEqual(decodeJwt(accessToken), {
    role: "authenticated",
    aal: "aal1",
    is_anonymous: false,
    session_id: SESSION,
    wallet_address: WALLET,
    sub: USER,
    aud: "authenticated",
    iss: ISSUER,
    iat: T0 / 1000,
    exp: T0 / 1000 + 3600,
  });
  assert.equal(expiresAt, T0 / 1000 + 3600);
  const session = await service().checkToken(accessToken);
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
  // A token signed by hand with the same key and claims is just as good (the format is the contract).
  await service().checkToken(await signWith(FIRST, validClaims()));
});

Deno.test("an RS256 key of 2048 bits signs and verifies, with its kid", async () => {
  const { privateKey } = await generateKeyPair("RS256", { modulusLength: 2048, extractable: true });
  const rsa = { ...(await exportJWK(privateKey)), kid: crypto.randomUUID(), alg: "RS256" };
  const { accessToken } = await service(keysOf([rsa])).issue(identity);
  assert.deepEqual(decodeProtectedHeader(accessToken), { alg: "RS256", kid: rsa.kid, typ: "JWT" });
  assert.equal((await service(keysOf([rsa])).checkToken(accessToken)).userId, USER);
});

Deno.test("an expired token is token_expired, also after it was verified while fresh", async () => {
  let now = T0;
  const verifier = service(undefined, { now: () => now, ttl: 60 });
  const { accessToken } = await verifier.issue(identity);
  await verifier.checkToken(accessToken);
  now = T0 + 59_000;
  await verifier.checkToken(accessToken);
  now = T0 + 60_000; // exp is exclusive: no tolerance
  await rejectsCode(verifier.checkToken(accessToken), "token_expired");
  now = T0 + 86_400_000;
  await rejectsCode(verifier.checkToken(accessToken), "token_expired");
  await rejectsCode(
    service(undefined, { now: () => T0 + 3_600_000 }).checkToken(accessToken),
    "token_expired",
  );
});

Deno.test("tampered tokens are invalid_token: payload, header or signature changed", async () => {
  const { accessToken } = await service().issue(identity);
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
      (await service().issue({ ...identity, sessionId: USER })).accessToken.split(".")[2]
    }`,
    "two parts": `${header}.${payload}`,
    "not a JWT": "not-a-token",
    "empty": "",
  };
  for (const [why, token] of Object.entries(cases)) {
    await rejectsCode(service().checkToken(token), "invalid_token", why);
  }
});

Deno.test('alg "none", in any spelling and with a signature left on, is invalid_token', async () => {
  const claims = validClaims();
  const { accessToken } = await service().issue(identity);
  for (const alg of ["none", "None", "NONE"]) {
    for (const header of [{ alg, typ: "JWT" }, { alg, kid: FIRST.kid }]) {
      const unsigned = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(claims))}.`;
      await rejectsCode(service().checkToken(unsigned), "invalid_token", `alg ${alg}`);
      await rejectsCode(
        service().checkToken(`${unsigned}${accessToken.split(".")[2]}`),
        "invalid_token",
        `alg ${alg} with a signature`,
      );
    }
  }
});

Deno.test("an HS256 token signed with the public key as its secret is invalid_token", async () => {
  const published = keysOf([FIRST]).published[0];
  // Every text and byte form a confused verifier might feed HMAC: the JWK, its JSON, x and y.
  const secrets: (string | Uint8Array)[] = [
    JSON.stringify(published),
    JSON.stringify({ kty: "EC", crv: "P-256", x: FIRST.x, y: FIRST.y }),
    `${FIRST.x}${FIRST.y}`,
    new Uint8Array(
      await crypto.subtle.exportKey(
        "raw",
        await crypto.subtle.importKey(
          "jwk",
          { kty: "EC", crv: "P-256", x: FIRST.x as string, y: FIRST.y as string },
          { name: "ECDSA", namedCurve: "P-256" },
          true,
          ["verify"],
        ),
      ),
    ),
  ];
  for (const secret of secrets) {
    for (const header of [{ kid: FIRST.kid }, {}]) {
      const token = await signHs256(validClaims(), secret, header);
      await rejectsCode(service().checkToken(token), "invalid_token", "asymmetric mode");
      // Also while HS256 is still accepted (the migration): the legacy secret is not the key.
      await rejectsCode(
        service(keysOf([FIRST], "verify")).checkToken(token),
        "invalid_token",
        "migration",
      );
    }
  }
});

Deno.test("an unknown kid, no kid, or a kid of another key is invalid_token", async () => {
  const stranger = generateDevSigningKey();
  const cases: Record<string, Promise<string>> = {
    "a key we do not publish": signWith(stranger, validClaims()),
    "our kid on a stranger's signature": signWith({ ...stranger, kid: FIRST.kid }, validClaims()),
    "no kid": signWith(FIRST, validClaims(), { kid: undefined }),
    "a kid that is not text": signWith(FIRST, validClaims(), { kid: 7 }),
  };
  for (const [why, token] of Object.entries(cases)) {
    await rejectsCode(service().checkToken(await token), "invalid_token", why);
  }
});

Deno.test("a token of another curve or algorithm naming our kid is invalid_token", async () => {
  for (
    const [alg, options] of [["ES384", {}], ["ES512", {}], ["PS256", {}], ["RS256", {}]] as const
  ) {
    const { privateKey } = await generateKeyPair(alg, { ...options, extractable: true });
    const token = await new SignJWT(validClaims())
      .setProtectedHeader({ alg, kid: FIRST.kid as string, typ: "JWT" })
      .sign(privateKey);
    await rejectsCode(service().checkToken(token), "invalid_token", alg);
  }
});

Deno.test("a token carrying its own key (jwk, jku, x5u, x5c) is invalid_token, even when the signature holds", async () => {
  const published = keysOf([FIRST]).published[0];
  const attacker = generateDevSigningKey();
  const headers: Record<string, Jwk> = {
    "jwk of our own key": { jwk: published },
    "jwk of the signer's key": { jwk: { kty: "EC", crv: "P-256", x: attacker.x, y: attacker.y } },
    "jku": { jku: "https://attacker.example/jwks.json" },
    "x5u": { x5u: "https://attacker.example/cert.pem" },
    "x5c": { x5c: ["MIIB"] },
  };
  for (const [why, header] of Object.entries(headers)) {
    // Signed with our real key: the header alone is reason enough.
    await rejectsCode(
      service().checkToken(await signWith(FIRST, validClaims(), header)),
      "invalid_token",
      why,
    );
  }
  await rejectsCode(
    service().checkToken(
      await signWith(attacker, validClaims(), {
        jwk: { kty: "EC", crv: "P-256", x: attacker.x, y: attacker.y },
      }),
    ),
    "invalid_token",
    "a stranger's key embedded",
  );
});

Deno.test("tokens for another audience or issuer, or without our claims, are invalid_token", async () => {
  const cases: Record<string, Record<string, unknown>> = {
    "audience anon": { aud: "anon" },
    "no audience": { aud: undefined },
    "another issuer": { iss: "https://another.supabase.co/auth/v1" },
    "the legacy issuer on an ES256 token": { iss: "wallet-proof" },
    "no issuer": { iss: undefined },
    "role service_role": { role: "service_role" },
    "session_id not a uuid": { session_id: "1" },
    "no session_id": { session_id: undefined },
    "sub not a uuid": { sub: "admin" },
    "no sub": { sub: undefined },
    "no exp": { exp: undefined },
    "no iat": { iat: undefined },
    "no wallet_address": { wallet_address: undefined },
  };
  for (const [why, change] of Object.entries(cases)) {
    const claims: Record<string, unknown> = { ...validClaims(), ...change };
    for (const key of Object.keys(claims)) if (claims[key] === undefined) delete claims[key];
    await rejectsCode(service().checkToken(await signWith(FIRST, claims)), "invalid_token", why);
  }
});

Deno.test("a verifier is given public keys only: a private JWK is refused when it is built", () => {
  const { kid, alg, use, key_ops, kty, crv, x, y, d } = FIRST;
  const withPrivate = { kid, alg, use, key_ops, kty, crv, x, y, d } as unknown as PublicJwk;
  assert.throws(
    () =>
      createSessionTokens({
        issuer: ISSUER,
        publicKeys: [withPrivate],
        legacySecret: null,
        db: noDatabase,
      }),
    TypeError,
  );
  // What configuration publishes has no private member, whatever the given JWK held.
  for (const key of keysOf([FIRST, SECOND]).published) {
    assert.deepEqual(Object.keys(key).sort(), [
      "alg",
      "crv",
      "key_ops",
      "kid",
      "kty",
      "use",
      "x",
      "y",
    ]);
  }
});

Deno.test("rotation signs no one out: standby published, switch, old tokens until removed", async () => {
  // 1. In use: FIRST. A creator signs in.
  const before = service(keysOf([FIRST]));
  const { accessToken: old } = await before.issue(identity);
  // 2. SECOND added as a standby key: published and verifying, FIRST still signs.
  const standby = service(keysOf([FIRST, SECOND]));
  assert.deepEqual(keysOf([FIRST, SECOND]).published.map((key) => key.kid), [
    FIRST.kid,
    SECOND.kid,
  ]);
  assert.equal(decodeProtectedHeader((await standby.issue(identity)).accessToken).kid, FIRST.kid);
  await standby.checkToken(old);
  // A token of the standby key verifies already (a process that switched earlier than this one).
  await standby.checkToken(await signWith(SECOND, validClaims()));
  // 3. Switch: SECOND first. New tokens name SECOND; the old one is still accepted.
  const switched = service(keysOf([SECOND, FIRST]));
  const { accessToken: fresh } = await switched.issue(identity);
  assert.equal(decodeProtectedHeader(fresh).kid, SECOND.kid);
  assert.equal((await switched.checkToken(old)).userId, USER);
  assert.equal((await switched.checkToken(fresh)).userId, USER);
  // 4. FIRST removed (revoked) once its last token has expired, or at once after a leak.
  const removed = service(keysOf([SECOND]));
  await rejectsCode(removed.checkToken(old), "invalid_token", "the removed key's token");
  await removed.checkToken(fresh);
});

Deno.test("legacy HS256 signs only when chosen, and the migration to ES256 signs no one out", async () => {
  // Legacy, chosen: HS256 under JWT_SECRET, no kid, legacy issuer accepted for tokens from before.
  const legacy = service(keysOf([], "sign"));
  const { accessToken: hs256 } = await legacy.issue(identity);
  assert.deepEqual(decodeProtectedHeader(hs256), { alg: "HS256", typ: "JWT" });
  await legacy.checkToken(hs256);
  await legacy.checkToken(await signHs256({ ...validClaims(), iss: "wallet-proof" }, SECRET));
  // Step 1: the ES256 key added while HS256 still signs: published, verifying.
  const prepared = service(keysOf([FIRST], "sign"));
  assert.equal(decodeProtectedHeader((await prepared.issue(identity)).accessToken).alg, "HS256");
  await prepared.checkToken(await signWith(FIRST, validClaims()));
  // Step 2: the switch (JWT_LEGACY_HS256=verify): ES256 signs, HS256 tokens verify till they expire.
  const migrating = service(keysOf([FIRST], "verify"));
  const { accessToken: es256 } = await migrating.issue(identity);
  assert.equal(decodeProtectedHeader(es256).alg, "ES256");
  await migrating.checkToken(hs256);
  await migrating.checkToken(es256);
  // Step 3: the legacy secret dropped: HS256 refused, even one signed with the right secret.
  const done = service(keysOf([FIRST]));
  await rejectsCode(done.checkToken(hs256), "invalid_token", "HS256 after the migration");
  await done.checkToken(es256);
  // While HS256 verifies, another HMAC or a wrong secret is still refused.
  for (
    const [why, token] of [
      [
        "HS512",
        await new SignJWT(validClaims()).setProtectedHeader({ alg: "HS512" }).sign(
          new TextEncoder().encode(SECRET),
        ),
      ],
      ["another secret", await signHs256(validClaims(), `${SECRET}-but-another`)],
      ["HS256 naming a kid", await signHs256(validClaims(), SECRET, { kid: FIRST.kid })],
    ] as const
  ) {
    await rejectsCode(migrating.checkToken(token), "invalid_token", why);
  }
});

/** The local modules `deno info` finds in an entrypoint's graph. */
async function moduleGraph(entry: string): Promise<string[]> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", new URL(`../${entry}`, import.meta.url).pathname],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  assert.ok(output.success, `deno info ${entry}`);
  const graph = JSON.parse(new TextDecoder().decode(output.stdout));
  return graph.modules.map((module: { specifier: string }) => module.specifier);
}

Deno.test("user-secrets holds no signing code: session-signer.ts is in wallet-proof's graph alone", async () => {
  const signer = /\/functions\/_shared\/auth\/session-signer\.ts$/;
  const userSecrets = await moduleGraph("functions/user-secrets/index.ts");
  assert.ok(userSecrets.some((specifier) => specifier.endsWith("/session-tokens.ts")));
  assert.ok(!userSecrets.some((specifier) => signer.test(specifier)), "user-secrets can sign");
  const walletProof = await moduleGraph("functions/wallet-proof/index.ts");
  assert.ok(walletProof.some((specifier) => signer.test(specifier)));
});
