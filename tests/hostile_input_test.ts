/**
 * Hostile input: thousands of seeded random requests over every route of the local app —
 * malformed and non-UTF-8 JSON, wrong types, huge and deeply nested bodies, unicode and control
 * characters, SQL fragments, forged and truncated tokens, forged reveal tokens, wrong methods and
 * paths — plus raw HTTP over a real socket for header injection and framing tricks. Every request
 * is hostile by construction (never a valid credential together with a valid body), so every
 * answer must be a 4xx JSON error {error:{code,message}} with a code from ERROR_STATUS and its
 * status; never a 5xx, a stored value, a stack trace or a key or string of the body repeated
 * back; and the service keeps answering.
 *
 * The seed is printed; replay a run with FUZZ_SEED=<seed>, one case with FUZZ_ONLY=<index>.
 * FUZZ_CASES raises the number of in-process cases (default 5,000).
 */
import assert from "node:assert/strict";
import { type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { generatePrivateKey } from "viem/accounts";
import { ERROR_STATUS } from "../protocol/error-codes.ts";
import { MAX_BODY_BYTES } from "../functions/_shared/http/bodies.ts";
import { SECRET_TYPES } from "../protocol/secret-types.ts";
import { isStaticPath, STATIC_ASSETS } from "../server/static.ts";
import { atEdge } from "../server/app.ts";
import { serveWithLimits } from "../server/connection-limits.ts";
import { bearer, newWallet, TEST_ORIGIN, type TestApp } from "./support/app.ts";
import {
  awkwardNumber,
  base64url,
  deeplyNested,
  hostileString,
  jsonValue,
  malformedJson,
  notAString,
  Rng,
  seedFromEnv,
  SQL_FRAGMENTS,
} from "./support/fuzz.ts";
import { describeWithDatabase } from "./support/suite.ts";

const SEED = seedFromEnv();
const CASES = Math.max(5000, Number(Deno.env.get("FUZZ_CASES") ?? 5000) || 5000);
const SOCKET_CASES = 400;
const ONLY = Deno.env.get("FUZZ_ONLY") ? Number(Deno.env.get("FUZZ_ONLY")) : null;
console.log(
  `hostile input: seed ${SEED} (replay with FUZZ_SEED=${SEED}), ${CASES} in-process + ${SOCKET_CASES} socket cases`,
);

// ---------------------------------------------------------------------------------------------
// Fixtures: a victim whose stored values must never appear, and an attacker with a real session.

interface Fixtures {
  readonly victim: { userId: string; sessionId: string; accessToken: string };
  readonly attacker: {
    account: PrivateKeyAccount;
    userId: string;
    sessionId: string;
    accessToken: string;
    refreshToken: string;
    /** The attacker's own sign-in, already used: replaying it must fail. */
    usedProof: { message: string; signature: string };
  };
  /** Every plaintext value stored by anyone: none may appear in any answer. */
  readonly storedValues: readonly string[];
  readonly forgedTokens: readonly string[];
}

const json = (body: unknown) => ({
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});

async function signInCapturing(app: TestApp, account: PrivateKeyAccount) {
  const nonce = await app.fetch("/api/auth/nonce", {
    method: "POST",
    ...json({ address: account.address }),
  });
  assert.equal(nonce.status, 200);
  const { message } = await nonce.json();
  const signature = await account.signMessage({ message });
  const proof = await app.fetch("/api/auth/wallet-proof", {
    method: "POST",
    ...json({ message, signature }),
  });
  const body = await proof.json();
  assert.equal(proof.status, 200, JSON.stringify(body));
  const claims = JSON.parse(
    new TextDecoder().decode(
      Uint8Array.from(
        atob(body.access_token.split(".")[1].replaceAll("-", "+").replaceAll("_", "/")),
        (c) => c.charCodeAt(0),
      ),
    ),
  );
  return {
    account,
    userId: body.user.id as string,
    sessionId: claims.session_id as string,
    accessToken: body.access_token as string,
    refreshToken: body.refresh_token as string,
    usedProof: { message, signature },
  };
}

async function store(app: TestApp, token: string, secretType: string, value: string) {
  const response = await app.fetch("/api/secrets", {
    method: "PUT",
    headers: bearer(token, { "content-type": "application/json" }),
    body: JSON.stringify({ secretType, value }),
  });
  assert.equal(response.status, 200, await response.text());
}

const fixturesByApp = new WeakMap<TestApp, Promise<Fixtures>>();

function fixtures(app: TestApp): Promise<Fixtures> {
  let pending = fixturesByApp.get(app);
  if (pending === undefined) {
    pending = prepare(app);
    fixturesByApp.set(app, pending);
  }
  return pending;
}

async function prepare(app: TestApp): Promise<Fixtures> {
  const victim = await signInCapturing(app, newWallet());
  const attacker = await signInCapturing(app, newWallet());
  const storedValues: string[] = [];
  for (const secretType of SECRET_TYPES) {
    const value = `victim-${secretType}-${crypto.randomUUID()}`;
    await store(app, victim.accessToken, secretType, value);
    storedValues.push(value);
  }
  for (const secretType of SECRET_TYPES.slice(0, 3)) {
    const value = `attacker-${secretType}-${crypto.randomUUID()}`;
    await store(app, attacker.accessToken, secretType, value);
    storedValues.push(value);
  }
  const forgedTokens = await forgeTokens(new Rng(SEED ^ 0x5eed), app, victim, attacker);
  return { victim, attacker, storedValues, forgedTokens };
}

// ---------------------------------------------------------------------------------------------
// Forged session tokens: none of them is a valid session, whatever the case does with it.

async function signed(
  key: Uint8Array,
  claims: Record<string, unknown>,
  header: Record<string, unknown> = { alg: "HS256", typ: "JWT" },
): Promise<string> {
  const head = base64url(JSON.stringify(header));
  const body = base64url(JSON.stringify(claims));
  const hmacKey = await crypto.subtle.importKey(
    "raw",
    key as Uint8Array<ArrayBuffer>,
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const signature = await crypto.subtle.sign(
    "HMAC",
    hmacKey,
    new TextEncoder().encode(`${head}.${body}`),
  );
  return `${head}.${body}.${base64url(new Uint8Array(signature))}`;
}

/** `claims` under `header` signed with the server's own ES256 key (a JWS signature is r || s). */
async function signedByServer(
  app: TestApp,
  claims: Record<string, unknown>,
  header: Record<string, unknown>,
): Promise<string> {
  const signing = app.config.sessionKeys.signing;
  assert.ok(signing.alg === "ES256");
  const key = await crypto.subtle.importKey(
    "jwk",
    signing.jwk,
    { name: "ECDSA", namedCurve: "P-256" },
    false,
    ["sign"],
  );
  const head = base64url(JSON.stringify({ kid: signing.kid, ...header }));
  const body = base64url(JSON.stringify(claims));
  const signature = await crypto.subtle.sign(
    { name: "ECDSA", hash: "SHA-256" },
    key,
    new TextEncoder().encode(`${head}.${body}`),
  );
  return `${head}.${body}.${base64url(new Uint8Array(signature))}`;
}

/** Changes one character that carries bits (never the last of a segment, which may be padding). */
function flipChar(rng: Rng, token: string): string {
  const positions: number[] = [];
  let start = 0;
  for (const segment of token.split(".")) {
    for (let i = start; i < start + segment.length - 1; i++) positions.push(i);
    start += segment.length + 1;
  }
  const at = rng.pick(positions);
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  let replacement = token[at];
  while (replacement === token[at]) replacement = rng.pick([...alphabet]);
  return token.slice(0, at) + replacement + token.slice(at + 1);
}

async function forgeTokens(
  rng: Rng,
  app: TestApp,
  victim: Fixtures["victim"],
  attacker: Fixtures["attacker"],
): Promise<string[]> {
  const now = Math.floor(Date.now() / 1000);
  const base = {
    sub: victim.userId,
    role: "authenticated",
    aud: "authenticated",
    iss: app.config.sessionKeys.issuer,
    iat: now,
    exp: now + 3600,
    session_id: victim.sessionId,
    wallet_address: "0x0000000000000000000000000000000000000001",
  };
  const tokens: string[] = [];
  const [attackerHead, , attackerSig] = attacker.accessToken.split(".");
  for (let i = 0; i < 400; i++) {
    const kind = i % 12;
    let token: string;
    switch (kind) {
      case 0: // garbage in JWT shape
        token = `${base64url(rng.bytes(rng.between(0, 40)))}.${
          base64url(rng.bytes(rng.between(0, 80)))
        }.${base64url(rng.bytes(rng.between(0, 40)))}`;
        break;
      case 1: // the attacker's real token, truncated
        token = attacker.accessToken.slice(0, rng.between(1, attacker.accessToken.length - 1));
        break;
      case 2: // one bit-carrying character changed
        token = flipChar(rng, attacker.accessToken);
        break;
      case 3: // the attacker's signature over the victim's claims
        token = `${attackerHead}.${base64url(JSON.stringify(base))}.${attackerSig}`;
        break;
      case 4: // alg none and algorithm confusion, unsigned or with the attacker's signature
        token = `${
          base64url(JSON.stringify({ alg: rng.pick(["none", "None", "NONE", "HS512", "RS256"]) }))
        }.${base64url(JSON.stringify(base))}.${rng.pick(["", attackerSig, "AAAA"])}`;
        break;
      case 5: // the victim's claims signed with a key that is not the server's
        token = await signed(rng.bytes(32), base);
        break;
      case 6: // the server's key, but claims that must be refused
        token = await signedByServer(
          app,
          rng.pick<Record<string, unknown>>([
            { ...base, exp: now - rng.between(1, 100_000) }, // expired
            { ...base, aud: "anon" },
            { ...base, iss: "someone-else" },
            { ...base, role: "service_role" },
            { ...base, sub: "not-a-uuid" },
            { ...base, sub: victim.userId.toUpperCase() },
            { ...base, session_id: crypto.randomUUID() }, // no such session
            { ...base, session_id: attacker.sessionId }, // a session, but not the victim's
            { ...base, sub: attacker.userId, session_id: victim.sessionId },
            { ...base, session_id: undefined },
            { ...base, exp: undefined },
            { ...base, sub: SQL_FRAGMENTS[0] },
          ]),
          rng.pick([{ alg: "ES256", typ: "JWT" }, { alg: "ES256", crit: ["b64"], b64: false }]),
        );
        break;
      case 7: // validly signed by the server, wrong audience
        token = await signedByServer(app, {
          ...base,
          aud: rng.pick(["service_role", "", "authenticated "]),
        }, { alg: "ES256" });
        break;
      case 8: // no JWT at all
        token = headerSafe(hostileString(rng, 120)).replace(/\s/g, "") || "x";
        break;
      case 9: // huge
        token = `${attackerHead}.${base64url(rng.bytes(rng.between(4000, 12000)))}.${attackerSig}`;
        break;
      case 10: // extra segments
        token = `${attacker.accessToken}.${base64url(rng.bytes(8))}`;
        break;
      default: // payload that is not JSON
        token = `${attackerHead}.${base64url(hostileString(rng))}.${attackerSig}`;
    }
    tokens.push(token);
  }
  return tokens;
}

/** Percent-encodes the UTF-8 of any string, lone surrogates included (encodeURIComponent throws). */
function pct(text: string): string {
  return Array.from(
    new TextEncoder().encode(text),
    (b) =>
      /[A-Za-z0-9_.~-]/.test(String.fromCharCode(b))
        ? String.fromCharCode(b)
        : `%${b.toString(16).padStart(2, "0").toUpperCase()}`,
  ).join("");
}

/** A header value fetch accepts: latin-1 only, no NUL/CR/LF (raw socket cases go further). */
function headerSafe(value: string): string {
  let out = "";
  for (const ch of value) {
    const code = ch.charCodeAt(0) & 0xff;
    if (code === 0 || code === 10 || code === 13) continue;
    out += String.fromCharCode(code);
  }
  return out.trim();
}

function authorization(rng: Rng, f: Fixtures): Record<string, string> {
  const token = rng.pick(f.forgedTokens);
  const value = rng.weighted<() => string>([
    [10, () => `Bearer ${token}`],
    [1, () => `bearer ${token}`],
    [1, () => `Basic ${btoa("postgres:postgres")}`],
    [1, () => "Bearer"],
    [1, () => `Bearer ${token} ${token}`],
    [1, () => token],
    [1, () => `Token ${token}`],
    [1, () => `Bearer ${token}, Bearer ${f.attacker.accessToken}`],
    [1, () => `Bearer\t${token}`],
    [1, () => headerSafe(`Bearer ${hostileString(rng, 40)}`)],
  ])();
  return value === "" ? { authorization: "Bearer" } : { authorization: value };
}

// ---------------------------------------------------------------------------------------------
// Bodies

type Body = { contentType: string | null; bytes: Uint8Array<ArrayBuffer> | string };

function hostileContentType(rng: Rng): string | null {
  return rng.pick([
    "application/json",
    "application/json; charset=utf-8",
    "APPLICATION/JSON",
    "application/json; charset=utf-16",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "application/jsonx",
    "json",
    null,
  ]);
}

/**
 * A body that no route accepts: malformed, not an object, oversized, or an object with a field
 * no schema knows (they are all strict). `null` is left out: the nonce route treats it as `{}`.
 */
function universallyBadBody(rng: Rng, fields: Record<string, unknown> = {}): Body {
  return rng.weighted<() => Body>([
    [
      4,
      () => ({
        contentType: "application/json",
        bytes: malformedJson(rng, JSON.stringify(fields)),
      }),
    ],
    [2, () => ({
      contentType: "application/json",
      bytes: JSON.stringify(
        rng.pick<unknown>([[], [fields], "string", 42, true, false, hostileString(rng)]),
      ),
    })],
    [2, () => ({
      contentType: "application/json",
      bytes: JSON.stringify({
        ...fields,
        [`x${headerSafe(hostileString(rng, 8))}`]: jsonValue(rng),
      }),
    })],
    [1, () => ({
      contentType: "application/json",
      // An own "__proto__" key (JSON.parse makes it a plain property): strict schemas refuse it.
      bytes: `{"__proto__":{"admin":true}${
        Object.keys(fields).length > 0 ? `,${JSON.stringify(fields).slice(1)}` : "}"
      }`,
    })],
    [1, () => ({ contentType: "application/json", bytes: oversized(rng) })],
    [
      1,
      () => ({ contentType: "application/json", bytes: deeplyNested(rng, rng.between(500, 2500)) }),
    ],
    [2, () => ({
      contentType: rng.pick(["text/plain", "application/xml", "multipart/form-data; boundary=x"]),
      bytes: JSON.stringify(fields) || "{}",
    })],
  ])();
}

function oversized(rng: Rng): string {
  const size = MAX_BODY_BYTES + rng.between(1, 3 * MAX_BODY_BYTES);
  return rng.chance(0.5)
    ? JSON.stringify({ value: "A".repeat(size) })
    : `[${Array.from({ length: Math.ceil(size / 2) }, () => "1").join(",")}]`;
}

const wrongTypeOrInvalidAddress = (rng: Rng): unknown => {
  if (rng.chance(0.5)) return notAString(rng);
  const candidate = rng.pick([
    hostileString(rng),
    `0x${rng.hex(39)}`,
    `0x${rng.hex(41)}`,
    `0X${rng.hex(40)}`,
    `${rng.hex(40)}`,
    `0x${rng.hex(38)}zz`,
    ` 0x${rng.hex(40)}`,
  ]);
  return /^0x[0-9a-fA-F]{40}$/.test(candidate) ? `${candidate}!` : candidate;
};

const invalidChainId = (rng: Rng): unknown => {
  const value = rng.chance(0.3) ? notAString(rng) : awkwardNumber(rng);
  return typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? -value : value;
};

function nonceBody(rng: Rng): Body {
  if (rng.chance(0.4)) return universallyBadBody(rng, { address: newWallet().address });
  const body: Record<string, unknown> = {};
  // At least one of the two fields is invalid.
  const which = rng.int(3);
  if (which !== 1) body.address = wrongTypeOrInvalidAddress(rng);
  if (which !== 0) body.chainId = invalidChainId(rng);
  return { contentType: "application/json", bytes: JSON.stringify(body) };
}

function siweLike(rng: Rng, f: Fixtures): string {
  const address = rng.pick([f.attacker.account.address, newWallet().address]);
  const domain = rng.pick(["127.0.0.1:54321", "evil.example", "127.0.0.1:54321.evil.example", ""]);
  const lines = [
    `${domain} wants you to sign in with your Ethereum account:`,
    rng.chance(0.8) ? address : hostileString(rng),
    "",
    rng.chance(0.5) ? hostileString(rng, 200) : "Sign in.",
    "",
    `URI: ${
      rng.pick([TEST_ORIGIN, "https://evil.example", "javascript:alert(1)", hostileString(rng)])
    }`,
    `Version: ${rng.pick(["1", "2", "", "1\u0000"])}`,
    `Chain ID: ${rng.pick(["1", "0", "-1", "1e3", "99999999999999999999", hostileString(rng, 8)])}`,
    `Nonce: ${rng.pick([rng.hex(32), "", "short", SQL_FRAGMENTS[1], hostileString(rng, 40)])}`,
    `Issued At: ${rng.pick([new Date().toISOString(), "2999-01-01T00:00:00Z", "yesterday", ""])}`,
  ];
  if (rng.chance(0.3)) {
    lines.push(`Expiration Time: ${rng.pick(["2000-01-01T00:00:00Z", "not a date"])}`);
  }
  if (rng.chance(0.2)) lines.splice(rng.int(lines.length), 1);
  if (rng.chance(0.2)) lines.splice(rng.int(lines.length), 0, hostileString(rng));
  return lines.join(rng.pick(["\n", "\r\n", "\n\n"]));
}

function signatureLike(rng: Rng): unknown {
  return rng.weighted<() => unknown>([
    [4, () => `0x${rng.hex(130)}`], // 65 random bytes: recovers to some other address, or fails
    [1, () => `0x${rng.hex(64)}${"f".repeat(64)}1b`], // high s
    [1, () => `0x${rng.hex(rng.between(0, 140))}`],
    [1, () => `0x${rng.hex(128)}${rng.pick(["00", "1b", "1c", "02", "ff"])}`],
    [1, () => rng.hex(130)],
    [1, () => hostileString(rng, 200)],
    [1, () => notAString(rng)],
    [1, () => `0x${"0".repeat(130)}`],
  ])();
}

async function proofBody(rng: Rng, f: Fixtures): Promise<Body> {
  const choice = rng.int(10);
  if (choice < 3) {
    return universallyBadBody(rng, { message: "x", signature: "0x" });
  }
  if (choice === 3) {
    // A replay of the attacker's own, already used, proof.
    return { contentType: "application/json", bytes: JSON.stringify(f.attacker.usedProof) };
  }
  if (choice === 4) {
    // A fresh, well-formed message for the attacker's address, signed by another wallet.
    const nonce = await issueNonceMessage(f.attacker.account.address);
    const other = privateKeyToAccount(generatePrivateKey());
    return {
      contentType: "application/json",
      bytes: JSON.stringify({
        message: nonce,
        signature: await other.signMessage({ message: nonce }),
      }),
    };
  }
  const body: Record<string, unknown> = {
    message: rng.chance(0.7)
      ? siweLike(rng, f)
      : rng.chance(0.5)
      ? hostileString(rng, 300)
      : notAString(rng),
    signature: signatureLike(rng),
  };
  if (rng.chance(0.1)) body.message = "m".repeat(rng.between(4097, 6000));
  if (rng.chance(0.1)) delete body[rng.pick(["message", "signature"])];
  return { contentType: "application/json", bytes: JSON.stringify(body) };
}

/** Set per app before the cases run: issues a real nonce message for an address. */
let issueNonceMessage: (address: string) => Promise<string> = () => Promise.resolve("");

function refreshBody(rng: Rng, f: Fixtures): Body {
  if (rng.chance(0.4)) return universallyBadBody(rng, { refresh_token: "x" });
  const token = rng.pick<() => unknown>([
    () => base64url(rng.bytes(32)),
    () => flipChar(rng, f.attacker.refreshToken),
    () => f.attacker.refreshToken.slice(0, -rng.between(1, 10)),
    () => `${f.attacker.refreshToken}${rng.pick(["=", "A", " "])}`,
    () => "",
    () => "r".repeat(rng.between(201, 5000)),
    () => hostileString(rng, 200) || "\u0000",
    () => notAString(rng),
    () => SQL_FRAGMENTS[rng.int(SQL_FRAGMENTS.length)],
  ])();
  return { contentType: "application/json", bytes: JSON.stringify({ refresh_token: token }) };
}

const CONTROL = [
  ..."\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\u0008\u000e\u000f\u0010\u001b\u001f",
];

function invalidSecretType(rng: Rng): unknown {
  if (rng.chance(0.3)) return notAString(rng);
  const type = rng.pick(SECRET_TYPES);
  const candidate = rng.pick([
    hostileString(rng, 40),
    type.toUpperCase(),
    `${type} `,
    ` ${type}`,
    `${type}\u0000`,
    `${type}'; --`,
    type.replace("_", "-"),
    "provider_g_key",
    "",
    `${type}${rng.pick(CONTROL)}`,
    SQL_FRAGMENTS[rng.int(SQL_FRAGMENTS.length)],
  ]);
  return (SECRET_TYPES as readonly unknown[]).includes(candidate) ? `${candidate}!` : candidate;
}

function invalidValue(rng: Rng): unknown {
  return rng.pick<() => unknown>([
    () => notAString(rng),
    () => "",
    () => " ".repeat(rng.between(1, 20)),
    () => "\t \n",
    () => `sk-${hostileString(rng, 30)}${rng.pick(CONTROL)}${hostileString(rng, 30)}`,
    () => `${rng.pick(CONTROL)}sk-live-0123456789abcdef`,
    () => "k".repeat(rng.between(4097, 12000)),
  ])();
}

/** PUT bodies that are invalid even with a valid session. */
function putBody(rng: Rng): Body {
  if (rng.chance(0.35)) {
    return universallyBadBody(rng, {
      secretType: rng.pick(SECRET_TYPES),
      value: "sk-0123456789abcdef",
    });
  }
  const which = rng.int(4);
  const body: Record<string, unknown> = {
    secretType: which === 0 || which === 2 ? invalidSecretType(rng) : rng.pick(SECRET_TYPES),
    value: which === 1 || which === 2 ? invalidValue(rng) : `sk-${hostileString(rng, 40)}`,
  };
  if (which === 3) delete body[rng.pick(["secretType", "value"])];
  return { contentType: "application/json", bytes: JSON.stringify(body) };
}

/** DELETE bodies that are invalid even with a valid session. */
function deleteBody(rng: Rng): Body {
  if (rng.chance(0.5)) return universallyBadBody(rng, { secretType: rng.pick(SECRET_TYPES) });
  return {
    contentType: "application/json",
    bytes: JSON.stringify(rng.chance(0.8) ? { secretType: invalidSecretType(rng) } : {}),
  };
}

function anyBody(rng: Rng): Body {
  return rng.weighted<() => Body>([
    [
      3,
      () => ({ contentType: "application/json", bytes: JSON.stringify(jsonValue(rng)) ?? "null" }),
    ],
    [
      1,
      () => ({
        contentType: "application/json",
        bytes: JSON.stringify({ secretTypes: [...SECRET_TYPES] }),
      }),
    ],
    [1, () => ({ contentType: "application/json", bytes: "{}" })],
    [1, () => ({
      contentType: "application/json",
      bytes: JSON.stringify({ secretTypes: [invalidSecretType(rng), rng.pick(SECRET_TYPES)] }),
    })],
    [2, () => universallyBadBody(rng)],
    [1, () => ({ contentType: hostileContentType(rng), bytes: "" })],
  ])();
}

// ---------------------------------------------------------------------------------------------
// Cases

interface Case {
  readonly kind: string;
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: Body | null;
}

const API = {
  nonce: ["/api/auth/nonce", "/functions/v1/wallet-proof/nonce", "/functions/v1/api/auth/nonce"],
  proof: ["/api/auth/wallet-proof", "/functions/v1/wallet-proof"],
  refresh: ["/api/auth/refresh", "/functions/v1/wallet-proof/refresh"],
  logout: ["/api/auth/logout", "/functions/v1/wallet-proof/logout"],
  secrets: ["/api/secrets", "/functions/v1/user-secrets", "/functions/v1/api/secrets"],
  reveal: ["/api/secrets/reveal", "/functions/v1/user-secrets/reveal"],
};

const ALLOWED: Record<string, readonly string[]> = {
  nonce: ["POST"],
  proof: ["POST"],
  refresh: ["POST"],
  logout: ["POST"],
  secrets: ["GET", "PUT", "DELETE"],
  reveal: ["POST"],
};

const METHODS = [
  "GET",
  "POST",
  "PUT",
  "DELETE",
  "PATCH",
  "HEAD",
  "PROPFIND",
  "FOO",
  "M-SEARCH",
  "LOCK",
];

function wrongRevealSecret(rng: Rng, real: string): string | null {
  return rng.pick<() => string | null>([
    () => null,
    () => flipChar(rng, real.replaceAll(".", "x")),
    () => `${real}x`,
    () => real.slice(0, -1),
    () => real.slice(1),
    () => real.toUpperCase() === real ? `${real}Z` : real.toUpperCase(),
    () => `Bearer ${real}`,
    () => `${real},${real}`,
    () => `${real.slice(0, 10)} ${real.slice(10)}`,
    () => headerSafe(hostileString(rng, 64)) || "x",
    () => base64url(rng.bytes(32)),
    () => "",
  ])();
}

function withBody(method: string, body: Body | null): Body | null {
  return method === "GET" || method === "HEAD" ? null : body;
}

function hostileHeaders(rng: Rng): Record<string, string> {
  const headers: Record<string, string> = {};
  for (let i = rng.between(1, 3); i > 0; i--) {
    const [name, value] = rng.pick<() => [string, string]>([
      () => [
        "x-forwarded-for",
        rng.pick([
          headerSafe(hostileString(rng, 60)) || "x",
          "1.2.3.4, 5.6.7.8",
          rng.hex(rng.between(100, 8000)), // incompressible: a long key fails a btree insert
          "::1",
          "",
        ]),
      ],
      () => [
        "origin",
        rng.pick([
          "null",
          "https://evil.example",
          headerSafe(hostileString(rng)) || "x",
          `${TEST_ORIGIN}.evil.example`,
        ]),
      ],
      () => ["content-length", rng.pick(["-1", "abc", "99999999999999999999", "0", "1e3"])],
      () => ["x-service-server-secret", headerSafe(hostileString(rng, 80)) || "x"],
      () => ["cookie", `session=${headerSafe(hostileString(rng))}`],
      () => ["x-http-method-override", rng.pick(METHODS)],
      () => ["x-original-url", "/api/secrets/reveal"],
      () => ["x-forwarded-host", "evil.example"],
      () => ["accept", headerSafe(hostileString(rng)) || "*/*"],
      () => ["apikey", headerSafe(hostileString(rng, 80)) || "x"],
      () => ["connection", rng.pick(["close", "keep-alive", "upgrade", "x-unknown, te"])],
      () => [
        "x-" + rng.hex(6),
        headerSafe(hostileString(rng, 200)) || "x".repeat(rng.between(1, 8000)),
      ],
      () => ["range", "bytes=0-"],
    ])();
    if (value !== "") headers[name] = value;
  }
  return headers;
}

async function nextCase(rng: Rng, f: Fixtures, revealToken: string): Promise<Case> {
  const route = rng.weighted<string>([
    [8, "nonce"],
    [9, "proof"],
    [5, "refresh"],
    [4, "logout"],
    [12, "secrets"],
    [8, "reveal"],
    [4, "method"],
    [5, "path"],
    [2, "static"],
  ]);
  let kase: Case;
  switch (route) {
    case "nonce":
      kase = {
        kind: "nonce",
        method: "POST",
        path: rng.pick(API.nonce),
        headers: {},
        body: nonceBody(rng),
      };
      break;
    case "proof":
      kase = {
        kind: "proof",
        method: "POST",
        path: rng.pick(API.proof),
        headers: {},
        body: await proofBody(rng, f),
      };
      break;
    case "refresh":
      kase = {
        kind: "refresh",
        method: "POST",
        path: rng.pick(API.refresh),
        headers: {},
        body: refreshBody(rng, f),
      };
      break;
    case "logout":
      kase = {
        kind: "logout",
        method: "POST",
        path: rng.pick(API.logout),
        headers: rng.chance(0.9) ? authorization(rng, f) : {},
        body: rng.chance(0.5) ? anyBody(rng) : null,
      };
      break;
    case "secrets": {
      const method = rng.pick(["GET", "PUT", "DELETE"]);
      // With the attacker's real session only bodies invalid for it; otherwise forged sessions.
      const realSession = method !== "GET" && rng.chance(0.5);
      const headers = realSession ? bearer(f.attacker.accessToken) : authorization(rng, f);
      const body = method === "GET"
        ? null
        : realSession
        ? (method === "PUT" ? putBody(rng) : deleteBody(rng))
        : rng.chance(0.5)
        ? anyBody(rng)
        : {
          contentType: "application/json",
          bytes: JSON.stringify({
            secretType: rng.pick(SECRET_TYPES),
            value: "sk-forged-0123456789",
          }),
        };
      kase = {
        kind: `secrets ${method}${realSession ? " (real session)" : ""}`,
        method,
        path: rng.pick(API.secrets),
        headers,
        body,
      };
      break;
    }
    case "reveal": {
      // Never both credentials: the real session with a wrong reveal token, or the real reveal
      // token with a forged session, or both wrong.
      const mode = rng.int(3);
      const headers: Record<string, string> = mode === 0
        ? bearer(f.attacker.accessToken)
        : rng.chance(0.9)
        ? authorization(rng, f)
        : {};
      const secret = mode === 1 ? revealToken : wrongRevealSecret(rng, revealToken);
      if (secret !== null && secret !== "") headers["x-service-server-secret"] = secret;
      kase = {
        kind: `reveal mode ${mode}`,
        method: "POST",
        path: rng.pick(API.reveal),
        headers,
        body: anyBody(rng),
      };
      break;
    }
    case "method": {
      const name = rng.pick(Object.keys(API) as (keyof typeof API)[]);
      const method = rng.pick(METHODS.filter((m) => !ALLOWED[name].includes(m)));
      kase = {
        kind: `wrong method ${method} on ${name}`,
        method,
        path: rng.pick(API[name]),
        headers: authorization(rng, f),
        body: withBody(method, anyBody(rng)),
      };
      break;
    }
    case "path": {
      const method = rng.pick(["GET", "POST", "PUT", "DELETE", "PATCH"]);
      let path = rng.pick<() => string>([
        () => `/api/${pct(hostileString(rng, 30))}`,
        () => `/functions/v1/${pct(hostileString(rng, 30))}`,
        () => `${rng.pick(Object.values(API).flat())}/${pct(hostileString(rng, 20))}`,
        () => rng.pick(Object.values(API).flat()).toUpperCase(),
        () => "/api/secrets%2Freveal",
        () => "/api/secrets;reveal",
        () => "/api/./secrets/../secrets/reveal",
        () => "//api/secrets",
        () => "/api/secrets/",
        () => "/functions/v1/user-secrets/reveal/",
        () => "/functions/v1/wallet-proof/../user-secrets",
        () => `/api/${"a/".repeat(rng.between(100, 1500))}`,
        // A run of slashes not at the end: a trailing-slash regex once backtracked on it.
        () =>
          `${rng.pick(["/api", "/functions/v1/user-secrets"])}/${
            "/".repeat(rng.between(100, 3000))
          }a`,
        () => `/api/secrets?secretType=${pct(SQL_FRAGMENTS[1])}&user_id=*`,
        () => "/functions/v1/_shared/db.ts",
        () => "/supabase/migrations/20261126100500_vault.sql",
        () => "/.local/dev-keys.json",
        () => "/settings/../.local/dev-keys.json",
        () => "/%2e%2e/%2e%2e/etc/passwd",
        () => "/api/%00",
        () => "/",
        () => "/favicon.ico",
      ])();
      if (rng.chance(0.2)) path += `#${pct(hostileString(rng, 10))}`;
      const finalMethod = method === "GET" && isStaticPath(new URL(path, TEST_ORIGIN).pathname)
        ? "POST"
        : method;
      kase = {
        kind: "path",
        method: finalMethod,
        path,
        headers: authorization(rng, f),
        body: withBody(finalMethod, universallyBadBody(rng)),
      };
      break;
    }
    default: {
      const method = rng.pick(["POST", "PUT", "DELETE", "PATCH", "PROPFIND"]);
      kase = {
        kind: `static ${method}`,
        method,
        path: rng.pick(Object.keys(STATIC_ASSETS)),
        headers: {},
        body: withBody(method, anyBody(rng)),
      };
    }
  }
  if (rng.chance(0.15)) kase = { ...kase, headers: { ...hostileHeaders(rng), ...kase.headers } };
  if (kase.kind === "proof" && rng.chance(0.3)) {
    // Proofs that pass the message checks reach the rate limits, which key on this header.
    kase = {
      ...kase,
      headers: {
        ...kase.headers,
        "x-forwarded-for": rng.pick([
          rng.hex(rng.between(50, 8000)),
          headerSafe(hostileString(rng)) || "x",
        ]),
      },
    };
  }
  if (kase.body !== null && kase.body.contentType !== null && !("content-type" in kase.headers)) {
    kase = { ...kase, headers: { ...kase.headers, "content-type": kase.body.contentType } };
  }
  return kase;
}

function describeCase(index: number, kase: Case): string {
  const body = kase.body === null
    ? "no body"
    : typeof kase.body.bytes === "string"
    ? JSON.stringify(kase.body.bytes.slice(0, 200))
    : `bytes ${Array.from(kase.body.bytes.slice(0, 40), (b) => b.toString(16)).join(" ")}`;
  const headers = Object.entries(kase.headers).map(([k, v]) =>
    `${k}: ${JSON.stringify(v.slice(0, 80))}`
  );
  return `case #${index} [${kase.kind}] ${kase.method} ${kase.path.slice(0, 200)} {${
    headers.join("; ")
  }} ${body}`;
}

// ---------------------------------------------------------------------------------------------
// The invariant every answer must keep

const STACK_TRACE =
  /\n\s+at |file:\/\/|\.ts:\d+|node_modules|registry\.npmjs|deno_node|\bat Object\./;
const DRIVER_TEXT =
  /syntax error at or near|violates|duplicate key|relation "|column "|PostgresError|pglite|ECONNREFUSED|TypeError|RangeError|ZodError/;

function checkAnswer(
  status: number,
  contentType: string | null,
  text: string,
  headerText: string,
  f: Fixtures,
): string | null {
  if (status >= 500) return `answered ${status}: ${text.slice(0, 300)}`;
  if (status < 400) return `answered ${status} to a hostile request: ${text.slice(0, 200)}`;
  for (const value of f.storedValues) {
    if (text.includes(value) || headerText.includes(value)) {
      return "a stored secret value was echoed";
    }
  }
  if (STACK_TRACE.test(text)) {
    return `stack trace or source path in the body: ${text.slice(0, 300)}`;
  }
  if (DRIVER_TEXT.test(text)) return `internal error text in the body: ${text.slice(0, 300)}`;
  if (!/^application\/json/.test(contentType ?? "")) {
    return `not JSON (${contentType}): ${text.slice(0, 100)}`;
  }
  let body: { error?: { code?: unknown; message?: unknown } };
  try {
    body = JSON.parse(text);
  } catch {
    return `unparseable JSON: ${text.slice(0, 200)}`;
  }
  const code = body.error?.code;
  if (typeof code !== "string" || !Object.hasOwn(ERROR_STATUS, code)) {
    return `no stable error code: ${text.slice(0, 200)}`;
  }
  if (ERROR_STATUS[code as keyof typeof ERROR_STATUS] !== status) {
    return `code ${code} answered with ${status}`;
  }
  if (typeof body.error?.message !== "string") return `no message: ${text.slice(0, 200)}`;
  return null;
}

/** The service's own words, which an error may name even when the caller sent them. */
const OWN_WORDS = new Set<string>([
  ...SECRET_TYPES,
  "secretType",
  "secretTypes",
  "refresh_token",
  "signature",
  "message",
  "address",
  "chainId",
  "scope",
  "value",
]);

/** Every key and string (8+ characters) in a JSON body that is not one of the service's words. */
function clientStrings(kase: Case): string[] {
  if (kase.body === null || typeof kase.body.bytes !== "string") return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(kase.body.bytes);
  } catch {
    return [];
  }
  const found: string[] = [];
  const visit = (node: unknown, depth: number) => {
    if (depth > 8) return;
    if (typeof node === "string") found.push(node);
    else if (Array.isArray(node)) node.forEach((item) => visit(item, depth + 1));
    else if (node !== null && typeof node === "object") {
      for (const [key, value] of Object.entries(node)) {
        found.push(key);
        visit(value, depth + 1);
      }
    }
  };
  visit(parsed, 0);
  return found.filter((text) => text.trim().length >= 8 && !OWN_WORDS.has(text.trim()));
}

/** An error that repeats a key or string the caller sent (raw or JSON-escaped). */
function echoOf(kase: Case, text: string): string | null {
  for (const sent of clientStrings(kase)) {
    if (text.includes(sent) || text.includes(JSON.stringify(sent).slice(1, -1))) {
      return `the error repeats ${JSON.stringify(sent.slice(0, 60))} from the body`;
    }
  }
  return null;
}

function toRequest(kase: Case): Request {
  const headers = new Headers(kase.headers);
  if (!headers.has("x-forwarded-for")) headers.set("x-forwarded-for", "127.0.0.1");
  return new Request(new URL(kase.path, TEST_ORIGIN), {
    method: kase.method,
    headers,
    body: kase.body === null ? null : kase.body.bytes,
  });
}

async function validFlowStillWorks(app: TestApp, f: Fixtures) {
  const creator = await signInCapturing(app, newWallet());
  await store(app, creator.accessToken, "provider_b_key", "sk-after-the-storm-0123456789");
  const list = await app.fetch("/api/secrets", { headers: bearer(creator.accessToken) });
  assert.equal(list.status, 200);
  assert.deepEqual((await list.json()).secrets.map((s: { secretType: string }) => s.secretType), [
    "provider_b_key",
  ]);
  const reveal = await app.fetch("/api/secrets/reveal", {
    method: "POST",
    headers: bearer(creator.accessToken, {
      "content-type": "application/json",
      "x-service-server-secret": app.config.serverRevealToken,
    }),
    body: "{}",
  });
  assert.equal(reveal.status, 200);
  assert.equal((await reveal.json()).secrets[0].value, "sk-after-the-storm-0123456789");
  // The victim's vault is whole: all seven entries are still listed.
  const victimList = await app.fetch("/api/secrets", { headers: bearer(f.victim.accessToken) });
  assert.equal(victimList.status, 200);
  assert.equal((await victimList.json()).secrets.length, SECRET_TYPES.length);
}

// ---------------------------------------------------------------------------------------------
// Raw HTTP over a real socket: framing and header tricks fetch cannot even express.

/** As server/main.ts serves the app: behind the connection limits, with their defaults. */
function serveOnLoopback(app: TestApp): { port: number; shutdown(): Promise<void> } {
  const server = serveWithLimits(
    { hostname: "127.0.0.1", port: 0 },
    atEdge(app.app.handler, app.config.clientIp),
  );
  return { port: server.addr.port, shutdown: () => server.shutdown() };
}

interface RawCase {
  readonly label: string;
  readonly bytes: Uint8Array;
  /** The request leaves the server waiting for more (a short body): end our side to finish it. */
  readonly truncated?: boolean;
  /** How many answers to wait for (pipelined requests get one each). */
  readonly answers?: number;
}

function rawCase(rng: Rng, f: Fixtures, host: string): RawCase {
  const token = rng.pick(f.forgedTokens).slice(0, 2000);
  const path = rng.pick(Object.values(API).flat());
  // Every body carries a field no schema knows, so even on the nonce route it is refused.
  const body = JSON.stringify({
    secretType: "provider_a_api_key",
    value: "sk-raw-0123456789abcdef",
    [`x${rng.hex(4)}`]: 1,
  });
  const auth = `Authorization: Bearer ${token}\r\n`;
  const line = (method = "POST", target = path) =>
    `${method} ${target} HTTP/1.1\r\nHost: ${host}\r\n`;
  const json = `Content-Type: application/json\r\n`;
  const close = "Connection: close\r\n";
  const latin1 = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0) & 0xff);
  const cases: (() => RawCase | [string, string])[] = [
    () => [
      "CRLF injected into a header value",
      `${line("GET")}${auth}X-Note: a\r\nSet-Cookie: injected=1\r\n${close}\r\n`,
    ],
    () => [
      "bare LF line endings",
      `GET ${path} HTTP/1.1\nHost: ${host}\n${auth.trim()}\nConnection: close\n\n`,
    ],
    () => [
      "bare CR inside a header",
      `${line("GET")}Authorization: Bearer ${token}\rX-Injected: 1\r\n${close}\r\n`,
    ],
    () => [
      "NUL inside a header value",
      `${line("GET")}Authorization: Bearer \u0000${token}\r\n${close}\r\n`,
    ],
    () => [
      "non-ASCII bytes in a header value",
      `${line("GET")}Authorization: Bearer \u00ff\u00fe${token}\r\n${close}\r\n`,
    ],
    () => [
      "obs-fold continuation line",
      `${line("GET")}Authorization: Bearer\r\n ${token}\r\n${close}\r\n`,
    ],
    () => [
      "a space before the colon",
      `${line("GET")}Authorization : Bearer ${token}\r\n${close}\r\n`,
    ],
    () => [
      "two differing Content-Lengths",
      `${line()}${auth}${json}Content-Length: ${body.length}\r\nContent-Length: ${
        body.length + 5
      }\r\n${close}\r\n${body}`,
    ],
    () => [
      "Content-Length with Transfer-Encoding (smuggling)",
      `${line()}${auth}${json}Content-Length: 4\r\nTransfer-Encoding: chunked\r\n${close}\r\n0\r\n\r\nGET /api/secrets/reveal HTTP/1.1\r\nHost: ${host}\r\nX-Service-Server-Secret: x\r\n\r\n`,
    ],
    () => [
      "invalid chunk sizes",
      `${line()}${auth}${json}Transfer-Encoding: chunked\r\n${close}\r\nzz\r\n${body}\r\n0\r\n\r\n`,
    ],
    () => [
      "Transfer-Encoding not ending in chunked",
      `${line()}${auth}${json}Transfer-Encoding: chunked, identity\r\n${close}\r\n${body}`,
    ],
    () => [
      "negative Content-Length",
      `${line()}${auth}${json}Content-Length: -1\r\n${close}\r\n${body}`,
    ],
    () => ({
      label: "Content-Length longer than the body (client gives up mid-body)",
      bytes: latin1(
        `${line()}${auth}${json}Content-Length: ${body.length + 100}\r\n${close}\r\n${body}`,
      ),
      truncated: true,
    }),
    () => ({
      label: "chunked body cut short",
      bytes: latin1(
        `${line()}${auth}${json}Transfer-Encoding: chunked\r\n${close}\r\n400\r\n${body}`,
      ),
      truncated: true,
    }),
    () => [
      "oversized headers",
      `${line("GET")}${auth}X-Big: ${"b".repeat(rng.between(70_000, 200_000))}\r\n${close}\r\n`,
    ],
    () => [
      "many headers",
      `${line("GET")}${auth}${
        Array.from({ length: rng.between(200, 2000) }, (_, i) => `X-H${i}: ${i}\r\n`).join("")
      }${close}\r\n`,
    ],
    () => [
      "garbage request line",
      `${
        headerSafe(hostileString(rng, 60))
      } ${path} HTTP/1.1\r\nHost: ${host}\r\n${auth}${close}\r\n`,
    ],
    () => ["HTTP/2 preface on HTTP/1", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"],
    () => ["HTTP/0.9 request", `GET ${path}\r\n\r\n`],
    () => ["unknown HTTP version", `GET ${path} HTTP/9.9\r\nHost: ${host}\r\n${auth}${close}\r\n`],
    () => [
      "absolute-form target to another host",
      `GET http://evil.example${path} HTTP/1.1\r\nHost: ${host}\r\n${auth}${close}\r\n`,
    ],
    () => ["asterisk-form target on GET", `GET * HTTP/1.1\r\nHost: ${host}\r\n${auth}${close}\r\n`],
    () => [
      "two Host headers",
      `GET ${path} HTTP/1.1\r\nHost: evil.example\r\nHost: ${host}\r\n${auth}${close}\r\n`,
    ],
    () => [
      "Host that makes no URL",
      `${rng.pick(["GET", "POST", "PUT", "DELETE"])} ${path} HTTP/1.1\r\nHost: ${
        rng.pick(["a b", "a<b", "[::1", "a%zz", "a:99999"])
      }\r\n${auth}${json}Content-Length: ${body.length}\r\n${close}\r\n${body}`,
    ],
    () => ["HTTP/1.0 without Host", `GET ${path} HTTP/1.0\r\n${auth}\r\n`],
    () => [
      "huge request target",
      `GET ${path}?${
        "q".repeat(rng.between(10_000, 100_000))
      } HTTP/1.1\r\nHost: ${host}\r\n${auth}${close}\r\n`,
    ],
    () => [
      "spoofed X-Forwarded-For",
      `${line()}${auth}${json}X-Forwarded-For: ${
        "9".repeat(rng.between(1000, 6000))
      }\r\nContent-Length: ${body.length}\r\n${close}\r\n${body}`,
    ],
    () => [
      "forged session with the real reveal token's header name",
      `POST /api/secrets/reveal HTTP/1.1\r\nHost: ${host}\r\n${auth}X-Service-Server-Secret: ${f.attacker.accessToken}\r\n${json}Content-Length: 2\r\n${close}\r\n{}`,
    ],
    () => ({
      label: "pipelined hostile requests",
      bytes: latin1(
        `${line("GET")}${auth}\r\n${line("DELETE")}${auth}${json}` +
          `Content-Length: ${body.length}\r\n${close}\r\n${body}`,
      ),
      answers: 2,
    }),
    () => [
      "lowercase method",
      `${
        rng.pick(["get", "post", "put", "delete"])
      } ${path} HTTP/1.1\r\nHost: ${host}\r\n${auth}${json}Content-Length: ${body.length}\r\n${close}\r\n${body}`,
    ],
    () => [
      "method the Fetch API forbids",
      `${rng.pick(["TRACE", "TRACK", "trace"])} ${path} HTTP/1.1\r\nHost: ${host}\r\n${close}\r\n`,
    ],
    () => [
      "Expect: 100-continue with an oversized body",
      `${line()}${auth}${json}Expect: 100-continue\r\nContent-Length: ${
        MAX_BODY_BYTES * 4
      }\r\n${close}\r\n${"x".repeat(MAX_BODY_BYTES * 4)}`,
    ],
    () => ["unicode header name", `${line("GET")}Authörization: Bearer ${token}\r\n${close}\r\n`],
    () => ({
      // Often not a whole request head yet, which a server rightly waits for: the client then
      // gives up (half-closes), and the server must close without a crash or an answer of ours.
      label: "random bytes",
      bytes: rng.bytes(rng.between(1, 300)),
      truncated: true,
    }),
  ];
  const made = rng.pick(cases)();
  return Array.isArray(made) ? { label: made[0], bytes: latin1(made[1]) } : made;
}

interface RawAnswer {
  /** The final (non-1xx) status, null when the server closed without an HTTP/1 answer. */
  readonly status: number | null;
  readonly headers: string;
  readonly contentType: string | null;
  readonly body: string;
}

interface RawExchange {
  readonly answers: readonly RawAnswer[];
  /** Deno.serve also speaks HTTP/2 to a client that opens with its preface. */
  readonly http2: boolean;
}

/** Splits what the server sent into complete HTTP/1 answers, skipping interim 1xx ones. */
function parseAnswers(text: string): { answers: RawAnswer[]; rest: string } {
  const answers: RawAnswer[] = [];
  for (;;) {
    if (!/^HTTP\/1\.[01] \d{3}/.test(text)) return { answers, rest: text };
    const split = text.indexOf("\r\n\r\n");
    if (split < 0) return { answers, rest: text };
    const head = text.slice(0, split);
    const status = Number(head.slice(9, 12));
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
    if (text.length < split + 4 + length) return { answers, rest: text };
    const body = text.slice(split + 4, split + 4 + length);
    text = text.slice(split + 4 + length);
    if (status >= 100 && status < 200) continue; // 100 Continue comes before the real answer
    const contentType = /\r\ncontent-type: *([^\r]+)/i.exec(head)?.[1] ?? null;
    answers.push({ status, headers: head, contentType, body });
  }
}

/**
 * Writes the whole request and reads until the expected answers are complete or the server
 * closes. A truncated request gets our half-close after a moment, so the server sees the client
 * give up mid-body. A server that neither answers nor closes within 5 s fails the case.
 */
/** What answered a raw request, and what is wrong with it (null: nothing). */
function judgeRaw(answer: RawAnswer, f: Fixtures): [string, string | null] {
  if (/\r\n(set-cookie|x-injected|x-note):/i.test(answer.headers)) {
    return ["injected header", `an injected header came back: ${answer.headers}`];
  }
  if (answer.status === null) {
    // The HTTP server dropped what it could not parse as a request: nothing to check but silence.
    const wrong = answer.body === ""
      ? null
      : `not HTTP: ${JSON.stringify(answer.body.slice(0, 200))}`;
    return ["closed without an answer", wrong];
  }
  if (/^application\/json/.test(answer.contentType ?? "")) {
    const code = /"code":"([a-z_]+)"/.exec(answer.body)?.[1];
    return [
      `${answer.status} ${code}`,
      checkAnswer(answer.status, answer.contentType, answer.body, answer.headers, f),
    ];
  }
  // Refused by the HTTP server itself before the app saw it (400, 431 ...): no JSON, but never a
  // success, a 5xx or anything of ours.
  const what = `${answer.status} from the HTTP server`;
  if (answer.status >= 500) return [what, `answered ${answer.status}`];
  if (answer.status < 400) return [what, `answered ${answer.status} to a malformed request`];
  if (STACK_TRACE.test(answer.body) || f.storedValues.some((v) => answer.body.includes(v))) {
    return [what, "leaked internals"];
  }
  return [what, null];
}

async function sendRaw(port: number, kase: RawCase): Promise<RawExchange> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const expected = kase.answers ?? 1;
  let received = "";
  let parsed: { answers: RawAnswer[]; rest: string } = { answers: [], rest: "" };
  let http2 = false;
  const reading = (async () => {
    const buffer = new Uint8Array(64 * 1024);
    for (;;) {
      const n = await conn.read(buffer).catch(() => null);
      if (n === null) return;
      const chunk = buffer.subarray(0, n);
      if (received === "" && n >= 9 && chunk[0] === 0 && chunk[3] === 0x04) http2 = true;
      received += new TextDecoder("latin1").decode(chunk);
      parsed = parseAnswers(received);
      if (http2 || parsed.answers.length >= expected) return;
    }
  })();
  const writing = (async () => {
    let offset = 0;
    while (offset < kase.bytes.length) offset += await conn.write(kase.bytes.subarray(offset));
  })().catch(() => {}); // the server may answer and close before reading everything
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    if (kase.truncated) {
      await writing;
      await new Promise((resolve) => setTimeout(resolve, 100));
      await conn.closeWrite().catch(() => {});
    }
    const timeout = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), 5000);
    });
    if ((await Promise.race([reading, timeout])) === "timeout") {
      throw new Error("the server neither answered nor closed within 5 s");
    }
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch {
      // already closed
    }
    await writing;
  }
  const answers = parsed.answers.length > 0 || http2 ? parsed.answers : [{
    status: null,
    headers: "",
    contentType: null,
    body: received,
  }];
  return { answers, http2 };
}

// ---------------------------------------------------------------------------------------------

describeWithDatabase("hostile input", {
  async [
    `${CASES} seeded hostile requests over every route are each answered with a 4xx JSON error, never a 5xx, a value or a stack trace`
  ](
    app,
  ) {
    const f = await fixtures(app);
    issueNonceMessage = async (address) => {
      const response = await app.fetch("/api/auth/nonce", { method: "POST", ...json({ address }) });
      return (await response.json()).message;
    };
    const rng = new Rng(SEED);
    const failures: string[] = [];
    const codes = new Map<string, number>();
    const started = performance.now();
    for (let index = 0; index < CASES; index++) {
      const kase = await nextCase(rng, f, app.config.serverRevealToken);
      if (ONLY !== null && index !== ONLY) continue;
      let problem: string | null;
      try {
        const response = await app.app.handler(toRequest(kase));
        const text = await response.text();
        const headerText = [...response.headers].map(([k, v]) => `${k}: ${v}`).join("\n");
        problem = checkAnswer(
          response.status,
          response.headers.get("content-type"),
          text,
          headerText,
          f,
        ) ?? echoOf(kase, text);
        const code = /"code":"([a-z_]+)"/.exec(text)?.[1] ?? String(response.status);
        codes.set(`${response.status} ${code}`, (codes.get(`${response.status} ${code}`) ?? 0) + 1);
      } catch (error) {
        problem = `the app threw instead of answering: ${(error as Error).name}: ${
          (error as Error).message
        }`;
      }
      if (problem !== null) failures.push(`${describeCase(index, kase)}\n    -> ${problem}`);
    }
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `  ${CASES} cases in ${seconds.toFixed(1)} s; answers: ${
        [...codes].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} x${n}`).join(", ")
      }`,
    );
    assert.deepEqual(
      failures.slice(0, 15),
      [],
      `${failures.length} of ${CASES} hostile requests broke the contract (replay: FUZZ_SEED=${SEED} FUZZ_ONLY=<case>)`,
    );
    await validFlowStillWorks(app, f);
  },

  async [
    `${SOCKET_CASES} raw HTTP requests with header injection and framing tricks over a real socket never get a 5xx, a value or a stack trace, and the server keeps serving`
  ](
    app,
  ) {
    const f = await fixtures(app);
    const server = serveOnLoopback(app);
    const host = `127.0.0.1:${server.port}`;
    const rng = new Rng(SEED ^ 0x50c7e7);
    const failures: string[] = [];
    const outcomes = new Map<string, number>();
    try {
      for (let index = 0; index < SOCKET_CASES; index++) {
        const kase = rawCase(rng, f, host);
        const label = kase.label;
        let problem: string | null = null;
        let outcome: string;
        try {
          const exchange = await sendRaw(server.port, kase);
          const seen: string[] = [];
          for (const answer of exchange.answers) {
            const [what, wrong] = judgeRaw(answer, f);
            seen.push(what);
            problem ??= wrong;
          }
          outcome = exchange.http2 ? "answered as HTTP/2 (prior knowledge)" : seen.join(" then ");
        } catch (error) {
          outcome = "error";
          problem = (error as Error).message;
        }
        outcomes.set(`${label}: ${outcome}`, (outcomes.get(`${label}: ${outcome}`) ?? 0) + 1);
        if (problem !== null) failures.push(`socket case #${index} [${label}] -> ${problem}`);
      }
      console.log(
        `  socket outcomes:\n    ${
          [...outcomes].sort().map(([k, n]) => `${k} x${n}`).join("\n    ")
        }`,
      );
      assert.deepEqual(
        failures.slice(0, 15),
        [],
        `${failures.length} raw requests broke the contract (FUZZ_SEED=${SEED})`,
      );
      // The same server still serves a well-formed request.
      const alive = await fetch(`http://${host}/api/secrets`, {
        headers: bearer(f.victim.accessToken),
      });
      assert.equal(alive.status, 200);
      assert.equal((await alive.json()).secrets.length, SECRET_TYPES.length);
    } finally {
      await server.shutdown();
    }
  },
});
