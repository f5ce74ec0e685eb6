/**
 * POST /wallet-proof/refresh: a refresh token rotated for a new session answer, reuse detected. A
 * retry of a refresh whose answer was lost, told apart by the retry key sent with both tries, is
 * not reuse: it gets the same successor again.
 */
import { z } from "zod";
import type { AppConfig } from "../_shared/config/config.ts";
import type { Database } from "../_shared/db/db.ts";
import { clientIp, RATE_LIMIT_WINDOW_SECONDS, rateLimited } from "../_shared/auth/rate-limit.ts";
import {
  hashRefreshToken,
  newRefreshToken,
  type RefreshSuccessor,
  RETRY_KEY,
} from "../_shared/auth/refresh-tokens.ts";
import type { SessionTokens } from "../_shared/auth/session-tokens.ts";
import { readJson } from "../_shared/http/bodies.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import type { Logger } from "../_shared/http/log.ts";
import { parseRequest } from "../_shared/http/request-issues.ts";
import type { Handler } from "../_shared/http/router.ts";
import { sessionAnswer } from "./session-answer.ts";

const refreshRequest = z.strictObject({
  refresh_token: z.string().min(1).max(200),
  /** Random, the same on every try of one refresh: a retry with it is not taken for theft. */
  retry_key: z.string().regex(RETRY_KEY, "must be 22 to 200 URL-safe characters").optional(),
});

/** The attempt's count in its window, and the rotated session when the token was spent. */
type RefreshAttempt =
  & { hits: number; retry_after: number }
  & (
    | { session_id: string; user_id: string; wallet_address: string }
    | { session_id: null; user_id: null; wallet_address: null }
  );

/**
 * $1 the presented token's hash, $2 its successor's, $3 the client's bucket, $4 the window, $5 the
 * limit, $6 the retry key's hash (or null). hit_rate_limit is volatile, so its CTE runs exactly
 * once, before the update reads it. When nothing was spent (over the limit, or a token that is not
 * live), only the count was written: count_only commits it without waiting for the flush, since
 * anyone can send refresh tokens (WITHOUT_WAITING_FOR_FLUSH says why). A spend waits for it.
 */
const ROTATE = `with attempt as (
    select hits, retry_after from public.hit_rate_limit($3, $4)
  ), spent as (
    update public.auth_refresh_tokens t set used_at = now(), retry_key_hash = $6
      from public.auth_sessions s
     where t.token_hash = $1 and t.used_at is null and s.id = t.session_id
       and s.revoked_at is null and s.expires_at > now()
       and (select hits from attempt) <= $5
    returning t.session_id, s.user_id
  ), fresh as (
    insert into public.auth_refresh_tokens (token_hash, session_id)
      select $2, session_id from spent
    returning session_id
  ), count_only as (
    select set_config('synchronous_commit', 'off', true)
     where not exists (select 1 from spent)
  )
  select attempt.hits, attempt.retry_after, rotated.session_id, rotated.user_id,
         rotated.wallet_address
    from attempt left join (
      select spent.session_id, spent.user_id, u.wallet_address
        from spent join fresh on true join public.wallet_users u on u.id = spent.user_id
    ) rotated on true
    left join count_only on true`;

/**
 * A spent token sent again with the retry key it was spent with, this soon after, while its
 * successor is still unused, is the same client trying again after a lost or late answer (the
 * browser client gives up after at most 60 s and tries once more), and gets that successor again.
 * A copy of the token lacks the key (it travels only in the client's own requests): without it,
 * later, or once the successor has been used, a spent token sent again revokes the session.
 */
export const RETRY_GRACE_SECONDS = 120;

/** The presented token as stored, and whether sending it again is a retry (see above). */
const PRESENTED = `select t.session_id, s.user_id, u.wallet_address, t.used_at is not null as used,
         (s.revoked_at is not null or s.expires_at <= now()) as revoked,
         coalesce(t.retry_key_hash = $4 and t.used_at > now() - make_interval(secs => $3)
           and exists (
             select 1 from public.auth_refresh_tokens n
              where n.token_hash = $2 and n.session_id = t.session_id and n.used_at is null
           ), false) as retry
    from public.auth_refresh_tokens t
    join public.auth_sessions s on s.id = t.session_id
    join public.wallet_users u on u.id = s.user_id
   where t.token_hash = $1`;

type Presented = {
  session_id: string;
  user_id: string;
  wallet_address: string;
  used: boolean;
  revoked: boolean;
  retry: boolean;
};

export interface RefreshDeps {
  readonly db: Database;
  readonly sessions: SessionTokens;
  readonly config: Pick<AppConfig, "accessTokenTtlSeconds" | "clientIp" | "rateLimits">;
  readonly log: Logger;
  readonly successorOf: RefreshSuccessor;
}

export function refreshRoute(deps: RefreshDeps): Handler {
  const { db, log } = deps;

  return async function refresh(request) {
    const body = parseRequest(refreshRequest, await readJson(request));
    const presented = await hashRefreshToken(body.refresh_token);
    const { retry_key: retryKey } = body;
    const next = retryKey === undefined
      ? newRefreshToken()
      : await deps.successorOf(body.refresh_token, retryKey);
    const nextHash = await hashRefreshToken(next);
    const retryKeyHash = retryKey === undefined ? null : await hashRefreshToken(retryKey);
    // One statement: the client's attempt is counted first, and within its limit the presented
    // token is spent and its successor stored. Over the limit nothing is spent or looked up.
    const [attempt] = await db.query<RefreshAttempt>(ROTATE, [
      presented,
      nextHash,
      `refresh:ip:${clientIp(request, deps.config.clientIp)}`,
      RATE_LIMIT_WINDOW_SECONDS,
      deps.config.rateLimits.refreshPerIpPerMinute,
      retryKeyHash,
    ]);
    if (attempt.hits > deps.config.rateLimits.refreshPerIpPerMinute) {
      throw rateLimited(attempt.retry_after);
    }
    if (attempt.session_id !== null) {
      return sessionAnswer(deps, {
        userId: attempt.user_id,
        sessionId: attempt.session_id,
        walletAddress: attempt.wallet_address,
      }, next);
    }
    const [known] = await db.query<Presented>(PRESENTED, [
      presented,
      nextHash,
      RETRY_GRACE_SECONDS,
      retryKeyHash,
    ]);
    // Revoking below needs evidence of reuse, a spent token; anything else is just not valid.
    if (known === undefined || (!known.used && !known.revoked)) {
      throw new ServiceError("invalid_refresh_token", "This refresh token is not valid.");
    }
    if (known.revoked) {
      throw new ServiceError("session_revoked", "This session has ended; sign in again.");
    }
    if (known.retry) {
      return sessionAnswer(deps, {
        userId: known.user_id,
        sessionId: known.session_id,
        walletAddress: known.wallet_address,
      }, next);
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
