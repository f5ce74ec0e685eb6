/**
 * The creator's kill switch for live-run access, and the account it belongs to, each one call of a
 * checked database function (migration 20261126030000). Locking needs the session alone; the
 * reveal refuses a locked creator's keys in its own statement (public.reveal_user_secrets);
 * unlocking needs a fresh signature and lives in wallet-proof (unlock.ts).
 */
import type { Queryable } from "../_shared/db/db.ts";
import { rateLimited } from "../_shared/auth/rate-limit.ts";
import { sessionEnded, type VerifiedSession } from "../_shared/auth/session-tokens.ts";
import { VAULT_WINDOW_SECONDS, type VaultLimits } from "./vault-store.ts";

/** Locks live-run access (counted as a vault write); when, the first lock's time if already. */
export async function lockReveals(
  db: Queryable,
  session: VerifiedSession,
  limits: VaultLimits,
): Promise<Date> {
  const [row] = await db.query<
    { outcome: string; locked_at: Date | null; retry_after: number | null }
  >(
    "select outcome, locked_at, retry_after from public.lock_reveals($1, $2, $3, $4)",
    [session.sessionId, session.userId, limits.writesPerMinute, VAULT_WINDOW_SECONDS],
  );
  if (row.outcome === "session_revoked") throw sessionEnded();
  if (row.outcome === "rate_limited") throw rateLimited(row.retry_after ?? 1);
  return row.locked_at!;
}

export interface CreatorAccount {
  readonly walletAddress: string;
  /** A contract wallet's chain; null for a key. */
  readonly chainId: number | null;
  readonly createdAt: Date;
  readonly lockedAt: Date | null;
}

/** The session's creator; session_revoked when the session has ended. */
export async function creatorAccount(
  db: Queryable,
  session: VerifiedSession,
): Promise<CreatorAccount> {
  const [row] = await db.query<{
    live: boolean;
    wallet_address: string;
    chain_id: string | null;
    created_at: Date;
    reveals_locked_at: Date | null;
  }>(
    `select live, wallet_address, chain_id::text as chain_id, created_at, reveals_locked_at
       from public.creator_account($1, $2)`,
    [session.sessionId, session.userId],
  );
  if (!row.live) throw sessionEnded();
  return {
    walletAddress: row.wallet_address,
    chainId: row.chain_id === null ? null : Number(row.chain_id),
    createdAt: row.created_at,
    lockedAt: row.reveals_locked_at,
  };
}
