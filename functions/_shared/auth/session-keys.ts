/**
 * The keys that sign and verify session tokens, as configuration gives them: private JWKs in the
 * format `supabase gen signing-key` prints and `supabase/signing_keys.json` holds (ES256 on P-256,
 * or RS256 of at least 2048 bits), each with a `kid`. The first key signs; every key is published
 * and verifies (a standby key before a switch, the previous one after it). What is published and
 * what verifies is built from the public members alone (publicJwk), so no private member can reach
 * a verifier or the JWKS answer.
 */
import { fromBase64 } from "../bytes.ts";

export type AsymmetricAlgorithm = "ES256" | "RS256";

/** A public key as the JWKS publishes it and verifiers import it: its public members only. */
export type PublicJwk =
  & {
    readonly kid: string;
    readonly alg: AsymmetricAlgorithm;
    readonly use: "sig";
    readonly key_ops: readonly ["verify"];
  }
  & (
    | { readonly kty: "EC"; readonly crv: "P-256"; readonly x: string; readonly y: string }
    | { readonly kty: "RSA"; readonly n: string; readonly e: string }
  );

/** The key that signs: its private JWK, with the members WebCrypto imports. */
export interface PrivateSigningKey {
  readonly kid: string;
  readonly alg: AsymmetricAlgorithm;
  readonly jwk: JsonWebKey;
}

/** How sessions are signed and verified (config.ts reads it from the environment). */
export interface SessionKeys {
  /** The `iss` tokens carry and verifiers require. */
  readonly issuer: string;
  /** The key that signs new tokens: asymmetric, or the legacy secret (JWT_LEGACY_HS256=sign). */
  readonly signing: PrivateSigningKey | { readonly alg: "HS256"; readonly secret: string };
  /** Every key whose tokens verify and which the JWKS publishes, the signing one first. */
  readonly published: readonly PublicJwk[];
  /** The legacy secret, while HS256 tokens are still accepted (JWT_LEGACY_HS256), else null. */
  readonly legacySecret: string | null;
}

/** The issuer of sessions signed before issuers were configurable, accepted on HS256 tokens only. */
export const LEGACY_ISSUER = "wallet-proof";

/** Where a kid of the local server's development keys starts: production refuses such a key. */
export const DEV_KID_PREFIX = "wallet-vault-dev-";

const KID = /^[\x21-\x7e]{1,200}$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const EC_PRIVATE = ["d"] as const;
const RSA_PRIVATE = ["d", "p", "q", "dp", "dq", "qi"] as const;
const MIN_RSA_BYTES = 256;

/** The key's public members, and only those: what verifies and what is published. */
export function publicJwk(key: PublicJwk): PublicJwk {
  const common = { kid: key.kid, alg: key.alg, use: "sig", key_ops: ["verify"] } as const;
  return key.kty === "EC"
    ? { ...common, kty: "EC", crv: "P-256", x: key.x, y: key.y }
    : { ...common, kty: "RSA", n: key.n, e: key.e };
}

/** The bytes of a base64url member, or null when it is not base64url. */
function base64UrlBytes(value: unknown): Uint8Array | null {
  if (typeof value !== "string" || !BASE64URL.test(value)) return null;
  try {
    return fromBase64(value.replaceAll("-", "+").replaceAll("_", "/"));
  } catch {
    return null;
  }
}

/**
 * One private JWK checked, or problems appended (naming `label` and the member, never a value).
 * Another curve, a short RSA modulus, a symmetric key or a public key alone are refused.
 */
export function readSigningJwk(
  given: unknown,
  label: string,
  problems: string[],
): { signing: PrivateSigningKey; published: PublicJwk } | null {
  const refuse = (why: string) => {
    problems.push(`${label} ${why}`);
    return null;
  };
  if (typeof given !== "object" || given === null || Array.isArray(given)) {
    return refuse("must be a JWK object");
  }
  const jwk = given as Record<string, unknown>;
  if (typeof jwk.kid !== "string" || !KID.test(jwk.kid)) {
    return refuse("needs a kid (printable text without spaces, as the Supabase CLI writes)");
  }
  if (jwk.use !== undefined && jwk.use !== "sig") return refuse('has a use other than "sig"');
  if (
    jwk.key_ops !== undefined &&
    !(Array.isArray(jwk.key_ops) && jwk.key_ops.includes("sign"))
  ) {
    return refuse('has key_ops without "sign"');
  }
  if (jwk.kty === "EC") {
    if (jwk.crv !== "P-256") return refuse("must be on the curve P-256 (ES256)");
    if (jwk.alg !== undefined && jwk.alg !== "ES256") return refuse("on P-256 must be ES256");
    const coordinates = [jwk.x, jwk.y, jwk.d].map(base64UrlBytes);
    if (coordinates.some((bytes) => bytes?.length !== 32)) {
      return refuse("needs x, y and its private d, each 32 bytes of base64url");
    }
    const published = publicJwk({
      kty: "EC",
      crv: "P-256",
      x: jwk.x as string,
      y: jwk.y as string,
      kid: jwk.kid,
      alg: "ES256",
      use: "sig",
      key_ops: ["verify"],
    });
    return { published, signing: privateKey(published, jwk, EC_PRIVATE) };
  }
  if (jwk.kty === "RSA") {
    if (jwk.alg !== undefined && jwk.alg !== "RS256") return refuse("of type RSA must be RS256");
    const modulus = base64UrlBytes(jwk.n);
    if (modulus === null || base64UrlBytes(jwk.e) === null) return refuse("needs n and e");
    // Leading zero bytes do not count towards the modulus's size.
    const significant = modulus.length - modulus.findIndex((byte) => byte !== 0);
    if (modulus.every((byte) => byte === 0) || significant < MIN_RSA_BYTES) {
      return refuse("must be an RSA key of at least 2048 bits");
    }
    if (RSA_PRIVATE.some((member) => base64UrlBytes(jwk[member]) === null)) {
      return refuse("needs its private members (d, p, q, dp, dq, qi)");
    }
    const published = publicJwk({
      kty: "RSA",
      n: jwk.n as string,
      e: jwk.e as string,
      kid: jwk.kid,
      alg: "RS256",
      use: "sig",
      key_ops: ["verify"],
    });
    return { published, signing: privateKey(published, jwk, RSA_PRIVATE) };
  }
  return refuse("must be an EC (ES256) or RSA (RS256) key; a shared secret cannot be published");
}

function privateKey(
  published: PublicJwk,
  given: Record<string, unknown>,
  members: readonly string[],
): PrivateSigningKey {
  const { kid, alg, use: _use, key_ops: _ops, ...material } = published;
  const jwk: Record<string, unknown> = { ...material };
  for (const member of members) jwk[member] = given[member];
  return { kid, alg, jwk: jwk as JsonWebKey };
}

/**
 * JWT_SIGNING_KEYS: one private JWK (what `supabase gen signing-key` prints) or an array of them
 * (what `signing_keys.json` holds), the first signing. Problems are appended; null when unusable.
 */
export function parseSigningKeys(
  text: string,
  problems: string[],
): { signing: PrivateSigningKey; published: PublicJwk[] } | null {
  let given: unknown;
  try {
    given = JSON.parse(text);
  } catch {
    // The parser's message may quote the text, which holds a private key: never repeat it.
    problems.push("JWT_SIGNING_KEYS must be JSON: a JWK, or an array of JWKs");
    return null;
  }
  const list = Array.isArray(given) ? given : [given];
  if (list.length === 0) {
    problems.push("JWT_SIGNING_KEYS holds no key");
    return null;
  }
  const before = problems.length;
  const keys = list.map((jwk, index) =>
    readSigningJwk(
      jwk,
      list.length === 1 ? "JWT_SIGNING_KEYS" : `JWT_SIGNING_KEYS entry ${index + 1}`,
      problems,
    )
  );
  const kids = keys.map((key) => key?.published.kid);
  kids.forEach((kid, index) => {
    if (kid !== undefined && kids.indexOf(kid) !== index) {
      problems.push(`JWT_SIGNING_KEYS entry ${index + 1} repeats the kid ${kid}`);
    }
  });
  if (problems.length > before) return null;
  return {
    signing: keys[0]!.signing,
    published: keys.map((key) => key!.published),
  };
}
