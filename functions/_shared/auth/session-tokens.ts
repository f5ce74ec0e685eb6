/**
 * Session access tokens: Supabase-compatible HS256 JWTs (sub = user id, role = aud =
 * "authenticated", session_id, wallet_address). `checkToken` checks the token alone (signature,
 * pinned algorithm, expiry, audience, claims); `checkLiveSession` also asks the database whether
 * the session is still live, so sign-out and revocation take effect at once. Routes declare which
 * they need in their function's route table (session-checks.ts).
 */
import type { CreatorClaims, Queryable } from "../db/db.ts";
import { ServiceError } from "../http/errors.ts";

const TOKEN_ISSUER = "wallet-proof";
const AUDIENCE = "authenticated";

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
  issue(identity: SessionIdentity): Promise<{ accessToken: string; expiresAt: number }>;
  /**
   * The token only (signature, algorithm, expiry, audience, claims), for a caller that checks the
   * session in its own statement (the vault's database functions), saving a round trip.
   */
  checkToken(token: string): Promise<TokenIdentity>;
  /** The token and, in the database, that its session is still live. */
  checkLiveSession(token: string): Promise<TokenIdentity>;
}

export interface SessionTokenOptions {
  readonly jwtSecret: string;
  readonly accessTokenTtlSeconds: number;
  readonly db: Queryable;
  readonly now?: () => number;
}

/** How many verified tokens a process remembers (a few hundred KiB at most). */
const VERIFIED_TOKENS_KEPT = 1000;

/**
 * jose, imported with the first token a process signs or checks: a sign-in starts with a nonce,
 * which needs none, so a cold wallet-proof answers it without loading jose.
 */
let jose: Promise<typeof import("jose")> | undefined;
const loadJose = () =>
  jose ??= import("jose").catch((error) => {
    jose = undefined; // tried again by the next token, not failed for the process's life
    throw error;
  });

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function createSessionTokens(options: SessionTokenOptions): SessionTokens {
  // Imported once: given raw bytes, jose would import the HMAC key again on every sign and verify.
  let keyPromise: Promise<CryptoKey> | undefined;
  const hmacKey = () =>
    keyPromise ??= crypto.subtle.importKey(
      "raw",
      new TextEncoder().encode(options.jwtSecret),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign", "verify"],
    );
  const nowSeconds = () => Math.floor((options.now?.() ?? Date.now()) / 1000);

  // Tokens verified recently, by their exact text: a creator's client sends the same token on
  // every call, so its HMAC and claims are checked once. Only tokens that passed are kept, expiry
  // is checked on every use, and liveness is still the database's answer.
  const verified = new Map<string, TokenIdentity>();

  async function checkToken(token: string): Promise<TokenIdentity> {
    const known = verified.get(token);
    if (known !== undefined) {
      if (known.expiresAt > nowSeconds()) return known;
      verified.delete(token); // expired: jose below says so with the right error
    }
    const { errors, jwtVerify } = await loadJose();
    let payload;
    try {
      ({ payload } = await jwtVerify(token, await hmacKey(), {
        // Pinned: rejects alg "none" and any switch to another algorithm.
        algorithms: ["HS256"],
        audience: AUDIENCE,
        issuer: TOKEN_ISSUER,
        requiredClaims: ["sub", "exp", "iat"],
        currentDate: new Date(nowSeconds() * 1000),
        clockTolerance: 0,
      }));
    } catch (error) {
      if (error instanceof errors.JWTExpired) {
        throw new ServiceError("token_expired", "The session token has expired; refresh it.");
      }
      throw new ServiceError("invalid_token", "The session token is not valid.");
    }
    const { sub, session_id: sessionId, wallet_address: walletAddress, role, exp } = payload;
    if (
      typeof sub !== "string" || !UUID.test(sub) || typeof sessionId !== "string" ||
      !UUID.test(sessionId) || typeof walletAddress !== "string" || role !== AUDIENCE
    ) {
      throw new ServiceError("invalid_token", "The session token is not valid.");
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
    async issue(identity) {
      const issuedAt = nowSeconds();
      const expiresAt = issuedAt + options.accessTokenTtlSeconds;
      const { SignJWT } = await loadJose();
      const accessToken = await new SignJWT({
        role: AUDIENCE,
        session_id: identity.sessionId,
        wallet_address: identity.walletAddress,
      })
        .setProtectedHeader({ alg: "HS256", typ: "JWT" })
        .setSubject(identity.userId)
        .setAudience(AUDIENCE)
        .setIssuer(TOKEN_ISSUER)
        .setIssuedAt(issuedAt)
        .setExpirationTime(expiresAt)
        .sign(await hmacKey());
      return { accessToken, expiresAt };
    },

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
