/**
 * Session access tokens: Supabase-compatible HS256 JWTs (sub = user id, role = aud =
 * "authenticated", session_id, wallet_address). The one verifier every function uses checks the
 * signature, pins the algorithm, checks expiry and audience, and asks the database whether the
 * session is still live, so sign-out and revocation take effect at once.
 */
import { errors as joseErrors, jwtVerify, SignJWT } from "jose";
import type { CreatorClaims, Queryable } from "./db.ts";
import { ServiceError } from "./errors.ts";

export const TOKEN_ISSUER = "wallet-proof";
const AUDIENCE = "authenticated";

export interface SessionIdentity {
  readonly userId: string;
  readonly sessionId: string;
  readonly walletAddress: string;
}

export interface VerifiedSession extends SessionIdentity {
  /** Claims to hand to `asCreator`, so row-level security sees the same creator. */
  readonly claims: CreatorClaims;
  readonly expiresAt: number;
}

export interface SessionTokens {
  issue(identity: SessionIdentity): Promise<{ accessToken: string; expiresAt: number }>;
  verify(token: string): Promise<VerifiedSession>;
}

export interface SessionTokenOptions {
  readonly jwtSecret: string;
  readonly accessTokenTtlSeconds: number;
  readonly db: Queryable;
  readonly now?: () => number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function createSessionTokens(options: SessionTokenOptions): SessionTokens {
  const key = new TextEncoder().encode(options.jwtSecret);
  const nowSeconds = () => Math.floor((options.now?.() ?? Date.now()) / 1000);

  return {
    async issue(identity) {
      const issuedAt = nowSeconds();
      const expiresAt = issuedAt + options.accessTokenTtlSeconds;
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
        .sign(key);
      return { accessToken, expiresAt };
    },

    async verify(token) {
      let payload;
      try {
        ({ payload } = await jwtVerify(token, key, {
          // Pinned: rejects alg "none" and any switch to another algorithm.
          algorithms: ["HS256"],
          audience: AUDIENCE,
          issuer: TOKEN_ISSUER,
          requiredClaims: ["sub", "exp", "iat"],
          currentDate: new Date(nowSeconds() * 1000),
          clockTolerance: 0,
        }));
      } catch (error) {
        if (error instanceof joseErrors.JWTExpired) {
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
      const live = await options.db.query(
        `select 1 from public.auth_sessions
          where id = $1 and user_id = $2 and revoked_at is null and expires_at > now()`,
        [sessionId, sub],
      );
      if (live.length === 0) {
        throw new ServiceError("session_revoked", "This session has ended; sign in again.");
      }
      return {
        userId: sub,
        sessionId,
        walletAddress,
        expiresAt: exp!,
        claims: { sub, role: AUDIENCE, session_id: sessionId, wallet_address: walletAddress },
      };
    },
  };
}
