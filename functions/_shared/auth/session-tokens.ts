/**
 * Session access tokens: Supabase-compatible JWTs (sub = user id, role = aud = "authenticated",
 * iss, exp, session_id, wallet_address), checked here with public keys only: a token's `kid` names
 * one of the published keys (session-keys.ts) and its algorithm must be that key's. HS256 under the
 * legacy secret verifies only while configuration keeps it (JWT_LEGACY_HS256). Signing is
 * session-signer.ts's, which only wallet-proof loads. `checkToken` checks the token alone;
 * `checkLiveSession` also asks the database whether the session is still live, so sign-out and
 * revocation take effect at once. Routes declare which they need (session-checks.ts).
 */
import type { CreatorClaims, Queryable } from "../db/db.ts";
import { ServiceError } from "../http/errors.ts";
import { LEGACY_ISSUER, type PublicJwk } from "./session-keys.ts";

export const AUDIENCE = "authenticated";

export interface SessionIdentity {
  readonly userId: string;
  readonly sessionId: string;
  readonly walletAddress: string;
}

/**
 * The creator a valid token names. Whether its session is still live is not part of it: that is
 * checkLiveSession's question, or the route's own statement's.
 */
export interface TokenIdentity extends SessionIdentity {
  /** The JWT claims the database sees (request.jwt.claims), so row-level security sees this creator. */
  readonly claims: CreatorClaims;
  readonly expiresAt: number;
}

export interface SessionTokens {
  /**
   * The token only (signature, algorithm, expiry, audience, claims), for a caller that checks the
   * session in its own statement (the vault's database functions), saving a round trip.
   */
  checkToken(token: string): Promise<TokenIdentity>;
  /** The token and, in the database, that its session is still live. */
  checkLiveSession(token: string): Promise<TokenIdentity>;
}

export interface SessionVerifyOptions {
  /** The iss tokens must carry. */
  readonly issuer: string;
  /** Public keys only: a key with a private member is refused. */
  readonly publicKeys: readonly PublicJwk[];
  /** HS256 tokens verify under this secret while the legacy mode or its migration lasts. */
  readonly legacySecret: string | null;
  readonly db: Queryable;
  readonly now?: () => number;
}

/** How many verified tokens a process remembers (a few hundred KiB at most). */
const VERIFIED_TOKENS_KEPT = 1000;

/**
 * Header members that would let a token name its own key or one to fetch: a verifier that honoured
 * them would trust whoever made the token, so any of them refuses it.
 */
const KEY_CARRYING_HEADERS = ["jwk", "jku", "x5u", "x5c", "x5t", "x5t#S256"] as const;

/** Any member of a JWK that only a private or symmetric key has. */
const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"] as const;

/**
 * jose, imported with the first token a process signs or checks: a sign-in starts with a nonce,
 * which needs none, so a cold wallet-proof answers it without loading jose.
 */
let jose: Promise<typeof import("jose")> | undefined;
export const loadJose = (): Promise<typeof import("jose")> =>
  jose ??= import("jose").catch((error) => {
    jose = undefined; // tried again by the next token, not failed for the process's life
    throw error;
  });

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const invalidToken = () => new ServiceError("invalid_token", "The session token is not valid.");

/** The WebCrypto algorithm of a published key's JWS algorithm. */
export function importAlgorithm(alg: "ES256" | "RS256"): EcKeyImportParams | RsaHashedImportParams {
  return alg === "ES256"
    ? { name: "ECDSA", namedCurve: "P-256" }
    : { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" };
}

export function createSessionTokens(options: SessionVerifyOptions): SessionTokens {
  for (const key of options.publicKeys) {
    // By construction a verifier holds public keys only; a private one here is a wiring mistake.
    if (PRIVATE_MEMBERS.some((member) => member in key)) {
      throw new TypeError("a session verifier is given public keys only");
    }
  }
  const byKid = new Map(options.publicKeys.map((key) => [key.kid, key]));
  // Imported once each: jose would otherwise import a JWK again on every verify.
  const imported = new Map<string, Promise<CryptoKey>>();
  const publicKey = (key: PublicJwk) => {
    let promise = imported.get(key.kid);
    if (promise === undefined) {
      const { kid: _kid, alg: _alg, use: _use, key_ops: _ops, ...material } = key;
      promise = crypto.subtle.importKey("jwk", material, importAlgorithm(key.alg), false, [
        "verify",
      ]);
      imported.set(key.kid, promise);
    }
    return promise;
  };
  let hmac: Promise<CryptoKey> | undefined;
  const legacyKey = (secret: string) =>
    hmac ??= crypto.subtle.importKey(
      "raw",
      new TextEncoder().encode(secret),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["verify"],
    );
  const algorithms = [
    ...new Set(options.publicKeys.map((key) => key.alg)),
    ...(options.legacySecret === null ? [] : ["HS256"]),
  ];
  const nowSeconds = () => Math.floor((options.now?.() ?? Date.now()) / 1000);

  /** The key a token's header names, refused unless its algorithm is exactly that key's. */
  function keyFor(header: Record<string, unknown>): Promise<CryptoKey> {
    if (KEY_CARRYING_HEADERS.some((member) => member in header)) throw invalidToken();
    if (header.alg === "HS256" && options.legacySecret !== null && header.kid === undefined) {
      return legacyKey(options.legacySecret);
    }
    const key = typeof header.kid === "string" ? byKid.get(header.kid) : undefined;
    // Unknown, removed or another algorithm than the key's own (an HS256 token "signed" with the
    // public key as its secret names an ES256 key's kid): refused before any signature math.
    if (key === undefined || header.alg !== key.alg) throw invalidToken();
    return publicKey(key);
  }

  // Tokens verified recently, by their exact text: a creator's client sends the same token on
  // every call, so its signature and claims are checked once. Only tokens that passed are kept,
  // expiry is checked on every use, and liveness is still the database's answer.
  const verified = new Map<string, TokenIdentity>();

  async function checkToken(token: string): Promise<TokenIdentity> {
    const known = verified.get(token);
    if (known !== undefined) {
      if (known.expiresAt > nowSeconds()) return known;
      verified.delete(token); // expired: jose below says so with the right error
    }
    const { errors, jwtVerify } = await loadJose();
    let payload, protectedHeader;
    try {
      ({ payload, protectedHeader } = await jwtVerify(
        token,
        (header) => keyFor(header as Record<string, unknown>),
        {
          // Pinned: rejects alg "none" and any algorithm no configured key has.
          algorithms,
          audience: AUDIENCE,
          requiredClaims: ["sub", "exp", "iat", "iss"],
          currentDate: new Date(nowSeconds() * 1000),
          clockTolerance: 0,
        },
      ));
    } catch (error) {
      if (error instanceof errors.JWTExpired) {
        throw new ServiceError("token_expired", "The session token has expired; refresh it.");
      }
      throw invalidToken();
    }
    const { sub, session_id: sessionId, wallet_address: walletAddress, role, exp, iss } = payload;
    // Tokens of the legacy secret were signed before the issuer was configurable.
    const issuerAccepted = iss === options.issuer ||
      (protectedHeader.alg === "HS256" && iss === LEGACY_ISSUER);
    if (
      !issuerAccepted || typeof sub !== "string" || !UUID.test(sub) ||
      typeof sessionId !== "string" || !UUID.test(sessionId) ||
      typeof walletAddress !== "string" || role !== AUDIENCE
    ) {
      throw invalidToken();
    }
    const session: TokenIdentity = {
      userId: sub,
      sessionId,
      walletAddress,
      expiresAt: exp!,
      claims: { sub, role: AUDIENCE, session_id: sessionId, wallet_address: walletAddress },
    };
    if (verified.size >= VERIFIED_TOKENS_KEPT) {
      verified.delete(verified.keys().next().value!); // the oldest
    }
    verified.set(token, session);
    return session;
  }

  return {
    checkToken,

    async checkLiveSession(token) {
      const session = await checkToken(token);
      await requireSessionLive(options.db, session);
      return session;
    },
  };
}

/** session_revoked unless the database says `session` is live (one query). */
export async function requireSessionLive(db: Queryable, session: SessionIdentity): Promise<void> {
  const [{ live }] = await db.query<{ live: boolean }>(LIVE_SESSION, [
    session.sessionId,
    session.userId,
  ]);
  if (!live) throw sessionEnded();
}

/** Whether the session is live (not revoked, not expired): the database's one definition of it. */
const LIVE_SESSION = "select public.session_is_live_for($1, $2) as live";

/** The one error for a session that was logged out, revoked or has expired in the database. */
export const sessionEnded = (): ServiceError =>
  new ServiceError("session_revoked", "This session has ended; sign in again.");
