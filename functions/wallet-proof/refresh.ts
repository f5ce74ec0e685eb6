/** POST /wallet-proof/refresh: a refresh token rotated for a new session answer, reuse detected. */
import { z } from "zod";
import type { AppConfig } from "../_shared/config/config.ts";
import type { Database } from "../_shared/db/db.ts";
import { hashRefreshToken, newRefreshToken } from "../_shared/auth/refresh-tokens.ts";
import type { SessionTokens } from "../_shared/auth/session-tokens.ts";
import { readJson } from "../_shared/http/bodies.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import type { Logger } from "../_shared/http/log.ts";
import { parseRequest } from "../_shared/http/request-issues.ts";
import type { Handler } from "../_shared/http/router.ts";
import { sessionAnswer } from "./session-answer.ts";

const refreshRequest = z.strictObject({ refresh_token: z.string().min(1).max(200) });

export interface RefreshDeps {
  readonly db: Database;
  readonly sessions: SessionTokens;
  readonly config: Pick<AppConfig, "accessTokenTtlSeconds">;
  readonly log: Logger;
}

export function refreshRoute(deps: RefreshDeps): Handler {
  const { db, log } = deps;

  return async function refresh(request) {
    const body = parseRequest(refreshRequest, await readJson(request));
    const presented = await hashRefreshToken(body.refresh_token);
    const next = newRefreshToken();
    const [rotated] = await db.query<
      { session_id: string; user_id: string; wallet_address: string }
    >(
      `with spent as (
         update public.auth_refresh_tokens t set used_at = now()
           from public.auth_sessions s
          where t.token_hash = $1 and t.used_at is null and s.id = t.session_id
            and s.revoked_at is null and s.expires_at > now()
          returning t.session_id, s.user_id
       ), fresh as (
         insert into public.auth_refresh_tokens (token_hash, session_id)
           select $2, session_id from spent
         returning session_id
       )
       select spent.session_id, spent.user_id, u.wallet_address
         from spent join fresh on true join public.wallet_users u on u.id = spent.user_id`,
      [presented, await hashRefreshToken(next)],
    );
    if (rotated !== undefined) {
      return sessionAnswer(deps, {
        userId: rotated.user_id,
        sessionId: rotated.session_id,
        walletAddress: rotated.wallet_address,
      }, next);
    }
    const [known] = await db.query<{ session_id: string; used: boolean; revoked: boolean }>(
      `select t.session_id, t.used_at is not null as used,
              (s.revoked_at is not null or s.expires_at <= now()) as revoked
         from public.auth_refresh_tokens t join public.auth_sessions s on s.id = t.session_id
        where t.token_hash = $1`,
      [presented],
    );
    // Revoking below needs evidence of reuse, a spent token; anything else is just not valid.
    if (known === undefined || (!known.used && !known.revoked)) {
      throw new ServiceError("invalid_refresh_token", "This refresh token is not valid.");
    }
    if (known.revoked) {
      throw new ServiceError("session_revoked", "This session has ended; sign in again.");
    }
    // A spent token presented again means it was copied: end the whole session (theft detection).
    await db.query(
      `update public.auth_sessions set revoked_at = now(), revoked_reason = 'refresh_token_reuse'
        where id = $1 and revoked_at is null`,
      [known.session_id],
    );
    log.info("refresh_token_reused", { session_id: known.session_id });
    throw new ServiceError(
      "refresh_token_reused",
      "This refresh token was already used; the session is revoked.",
    );
  };
}
