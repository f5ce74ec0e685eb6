/**
 * The database calls of the creator's controls in wallet-proof: its sessions listed, a nonce for
 * a sensitive act, and the acts themselves (signing sessions out, unlocking live-run access,
 * deleting the account), each one call of a checked database function that also checks the
 * session is live. An act spends its fresh signature's nonce in its own transaction
 * (public.spend_confirmation), so the act and the spending commit together or not at all.
 */
import { type Database, type Queryable, queryWithoutWaitingForFlush } from "../_shared/db/db.ts";
import { rateLimited } from "../_shared/auth/rate-limit.ts";
import type { Budget } from "../_shared/config/limits.ts";
import { sessionEnded, type TokenIdentity } from "../_shared/auth/session-tokens.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import { nonceRefusal } from "./contract-proof.ts";
import type { ConfirmPurpose, SignedAction } from "./fresh-signature.ts";

export type SessionRow = {
  id: string;
  created_at: Date;
  refreshed_at: Date | null;
  expires_at: Date;
  client_description: string | null;
};

/**
 * The creator's live sessions, newest first, read as the creator under row-level security
 * (public.list_creator_sessions), so no session of another creator can be listed whatever the
 * query says. A live session lists itself: none at all means the asking session has ended.
 */
export async function listSessions(db: Queryable, session: TokenIdentity): Promise<SessionRow[]> {
  const rows = await db.query<SessionRow>(
    `select id, created_at, refreshed_at, expires_at, client_description
       from public.list_creator_sessions($1, $2)`,
    [JSON.stringify(session.claims), session.userId],
  );
  if (rows.length === 0) throw sessionEnded();
  return rows;
}

/** What public.issue_confirmation_nonce is given beside the session. */
export interface ConfirmationNonce {
  readonly purpose: ConfirmPurpose;
  readonly nonce: string;
  readonly ttlSeconds: number;
  /** The chain a key's creator names; a contract wallet's creator signs on its own. */
  readonly chainId: number;
  readonly client: Budget;
}

export type IssuedConfirmation = {
  wallet_address: string;
  chain_id: string;
  issued_at: Date;
  expires_at: Date;
};

/**
 * A nonce bound to `purpose`, the session and the creator's address and chain. Like a sign-in
 * nonce: counted against the client's nonce budget, and not worth waiting for the flush.
 */
export async function issueConfirmationNonce(
  db: Pick<Database, "batch">,
  session: TokenIdentity,
  issue: ConfirmationNonce,
): Promise<IssuedConfirmation> {
  const [row] = await queryWithoutWaitingForFlush<
    IssuedConfirmation & {
      outcome: "issued" | "session_revoked" | "rate_limited";
      retry_after: number | null;
    }
  >(db, {
    text: `select outcome, wallet_address, chain_id::text as chain_id, issued_at, expires_at,
                  retry_after
             from public.issue_confirmation_nonce($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    params: [
      session.sessionId,
      session.userId,
      issue.purpose,
      issue.nonce,
      issue.ttlSeconds,
      issue.chainId,
      issue.client.bucket,
      issue.client.limit,
      issue.client.windowSeconds,
    ],
  });
  if (row.outcome === "session_revoked") throw sessionEnded();
  if (row.outcome === "rate_limited") throw rateLimited(row.retry_after ?? 1);
  return row;
}

/**
 * Every act's function takes the session, the creator, the signer's nonce, address and chains
 * ($1 to $6), then the act's own, then the creator's budget: its bucket's prefix, limit and window.
 */
function signedActionParams(
  { session, signer, creator }: SignedAction,
  ...own: unknown[]
): unknown[] {
  return [
    session.sessionId,
    session.userId,
    signer.nonce,
    signer.walletAddress,
    signer.messageChainId,
    signer.identityChainId,
    ...own,
    creator.prefix,
    creator.limit,
    creator.windowSeconds,
  ];
}

type ActOutcome = { outcome: string; retry_after: number | null };

/** Signs out the named sessions, all of this creator's or none; how many were still live. */
export async function signOutSessions(
  db: Queryable,
  action: SignedAction,
  sessionIds: readonly string[],
): Promise<number> {
  const [row] = await db.query<ActOutcome & { signed_out: number | null }>(
    `select outcome, signed_out, retry_after
       from public.sign_out_sessions($1, $2, $3, $4, $5, $6, $7::uuid[], $8, $9, $10)`,
    signedActionParams(action, sessionIds),
  );
  if (row.outcome === "signed_out") return row.signed_out ?? 0;
  if (row.outcome === "session_not_found") {
    throw new ServiceError(
      "session_not_found",
      "Not every id names a session of this creator; nothing was signed out.",
    );
  }
  throw confirmationRefusal(row);
}

/** Lets live runs reveal the creator's keys again. */
export async function unlockReveals(db: Queryable, action: SignedAction): Promise<void> {
  const [row] = await db.query<ActOutcome>(
    "select outcome, retry_after from public.unlock_reveals($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    signedActionParams(action),
  );
  if (row.outcome !== "unlocked") throw confirmationRefusal(row);
}

/**
 * Deletes the creator: its secrets, sessions, rate-limit windows and wallet mapping, with the
 * nonce's spending; nonce-use records and the audit trail stay, unlinked (public.delete_account
 * says how).
 */
export async function deleteAccount(db: Queryable, action: SignedAction): Promise<void> {
  const [row] = await db.query<ActOutcome>(
    "select outcome, retry_after from public.delete_account($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    signedActionParams(action),
  );
  if (row.outcome !== "deleted") throw confirmationRefusal(row);
}

/** The error for an act's refusal by public.spend_confirmation. */
function confirmationRefusal({ outcome, retry_after }: ActOutcome): ServiceError {
  switch (outcome) {
    case "session_revoked":
      return sessionEnded();
    case "rate_limited":
      return rateLimited(retry_after ?? 1);
    case "identity_mismatch":
      return new ServiceError(
        "signature_mismatch",
        "The signature is not the signed-in creator's: a key's creator signs with its key, a " +
          "contract wallet's on its own chain.",
      );
    case "nonce_session":
      return new ServiceError(
        "nonce_mismatch",
        "This nonce was issued to another session; ask for one from this session.",
      );
    default:
      return nonceRefusal(outcome);
  }
}
