/**
 * POST /wallet-proof/refresh: a refresh token rotated for a new session answer, reuse detected. A
 * client that may have to try again sends a random retry key's commitment (`retryKeyHash`) on the
 * first try and the key itself (`retryKey`) only on a retry: a retry of a refresh whose answer was
 * lost, told apart by a key matching the commitment the token was spent with, is not reuse and gets
 * the same successor again. A copy of the first request carries only the commitment, so sent again
 * it gets nothing.
 */
import { z } from "zod";
import type { AppConfig } from "../_shared/config/app-config.ts";
import { budget } from "../_shared/config/limits.ts";
import type { Database } from "../_shared/db/db.ts";
import { clientIp, rateLimited } from "../_shared/auth/rate-limit.ts";
import {
  hashRefreshToken,
  newRefreshToken,
  parseRetryKeyHash,
  type RefreshSuccessor,
  RETRY_KEY,
  RETRY_KEY_HASH,
  retryKeyCommitment,
  sameDigest,
} from "../_shared/auth/refresh-tokens.ts";
import type { SessionSigner } from "../_shared/auth/session-signer.ts";
import { readJson } from "../_shared/http/bodies.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import type { Logger } from "../_shared/http/log.ts";
import { parseRequest } from "../_shared/http/request-issues.ts";
import type { Handler } from "../_shared/http/router.ts";
import { presentedRefreshToken, revokeForReuse, rotateRefreshToken } from "./sign-in-store.ts";
import { sessionAnswer } from "./session-answer.ts";

export const refreshRequest = z.strictObject({
  refresh_token: z.string().min(1).max(200),
  /** The first try's: SHA-256 of a random key, new for each token's refresh. */
  retryKeyHash: z.string().regex(
    RETRY_KEY_HASH,
    "must be the retry key's SHA-256 in base64url without padding (43 characters)",
  ).optional(),
  /** A retry's: the key whose SHA-256 the first try sent. */
  retryKey: z.string().regex(RETRY_KEY, "must be 22 to 200 URL-safe characters").optional(),
}).refine((body) => body.retryKeyHash === undefined || body.retryKey === undefined, {
  error: "send retryKeyHash on a refresh's first try or retryKey on a retry, not both",
});

/**
 * `retry_key` (the key itself, on every try) refused by name: a client sending it would hand its
 * key to whoever copies its first request.
 */
function refusingRetiredField(body: unknown): unknown {
  if (typeof body === "object" && body !== null && Object.hasOwn(body, "retry_key")) {
    throw new ServiceError(
      "invalid_request",
      "retry_key is no longer accepted: send retryKeyHash (the key's SHA-256, base64url) on a " +
        "refresh's first try, and retryKey only on a retry.",
    );
  }
  return body;
}

/**
 * The longest a browser client waits for one answer (sdk/src/service-call.ts caps its timeoutMs
 * there), and the grace a retry gets: its two tries. The first may be spent by the service just
 * before the client gives up on it, and the retry must then reach the service within the client's
 * second wait.
 */
const LONGEST_CLIENT_TRY_SECONDS = 60;

/**
 * A spent token sent again with the key whose commitment it was spent with, this soon after, while
 * its successor is still unused, is the same client trying again after a lost or late answer, and
 * gets that successor again. Without the key, later, or once the successor has been used, a spent
 * token sent again revokes the session.
 */
const RETRY_GRACE_SECONDS = 2 * LONGEST_CLIENT_TRY_SECONDS;

export interface RefreshDeps {
  readonly db: Database;
  readonly signer: SessionSigner;
  readonly config: Pick<AppConfig, "accessTokenTtlSeconds" | "clientIp" | "rateLimits">;
  readonly log: Logger;
  readonly successorOf: RefreshSuccessor;
}

export function refreshRoute(deps: RefreshDeps): Handler {
  const { db, log } = deps;

  return async function refresh(request) {
    const body = parseRequest(refreshRequest, refusingRetiredField(await readJson(request)));
    const presented = hashRefreshToken(body.refresh_token);
    // A retry's key stands for its commitment: the first spend may have come from either try.
    const commitment = body.retryKey !== undefined
      ? retryKeyCommitment(body.retryKey)
      : body.retryKeyHash !== undefined
      ? parseRetryKeyHash(body.retryKeyHash)
      : null;
    const next = commitment === null
      ? newRefreshToken()
      : await deps.successorOf(body.refresh_token, commitment.text);
    const nextHash = hashRefreshToken(next);
    const client = budget(
      deps.config.rateLimits,
      "refreshPerIpPerMinute",
      "client",
      clientIp(request, deps.config.clientIp),
    );
    const attempt = await rotateRefreshToken(db, {
      presented,
      successor: nextHash,
      commitment: commitment?.bytes ?? null,
      client,
    });
    if (attempt.hits > client.limit) {
      throw rateLimited(attempt.retry_after);
    }
    if (attempt.session_id !== null) {
      return sessionAnswer(deps, {
        userId: attempt.user_id,
        sessionId: attempt.session_id,
        walletAddress: attempt.wallet_address,
      }, next);
    }
    const known = await presentedRefreshToken(db, presented, nextHash, RETRY_GRACE_SECONDS);
    // Revoking below needs evidence of reuse, a spent token; anything else is just not valid.
    if (known === undefined || (!known.used && !known.revoked)) {
      throw new ServiceError("invalid_refresh_token", "This refresh token is not valid.");
    }
    if (known.revoked) {
      throw new ServiceError("session_revoked", "This session has ended; sign in again.");
    }
    const committed = commitment !== null && known.commitment !== null &&
      sameDigest(commitment.bytes, new Uint8Array(known.commitment));
    if (committed && body.retryKey !== undefined && known.in_grace) {
      return sessionAnswer(deps, {
        userId: known.user_id,
        sessionId: known.session_id,
        walletAddress: known.wallet_address,
      }, next);
    }
    if (committed && body.retryKeyHash !== undefined) {
      // The very first try again: a copy of it (a logged body), or the client's own, arriving
      // after its retry was answered. Neither gets the successor; neither is taken for theft,
      // since the client's own cannot be told from a copy (and a copy's holder could send the
      // bare token, which is).
      log.info("refresh_replay_refused", { session_id: known.session_id });
      throw new ServiceError(
        "refresh_replayed",
        "This refresh was already made; only a retry with its retryKey gets the answer again.",
      );
    }
    // A spent token presented again means it was copied: end the whole session (theft detection).
    await revokeForReuse(db, known.session_id);
    log.info("refresh_token_reused", { session_id: known.session_id });
    throw new ServiceError(
      "refresh_token_reused",
      "This refresh token was already used; the session is revoked.",
    );
  };
}
