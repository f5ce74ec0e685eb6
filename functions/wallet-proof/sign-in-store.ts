/**
 * Sign-in's database calls: a nonce issued, a proof exchanged for a session, a contract wallet's
 * check admitted, a refresh token rotated (or found reused), sessions ended. Each is one
 * statement, handed the budgets it counts (config/limits.ts).
 */
import { type Database, type Queryable, queryWithoutWaitingForFlush } from "../_shared/db/db.ts";
import type { Budget, PrefixBudget } from "../_shared/config/limits.ts";
import type { SessionIdentity } from "../_shared/auth/session-tokens.ts";

/** What public.issue_nonce is given: the nonce, what it is bound to, and the client's limit. */
export interface NonceIssue {
  readonly nonce: string;
  readonly ttlSeconds: number;
  /** Lower-case 0x address, or null for any. */
  readonly address: string | null;
  readonly chainId: number | null;
  readonly client: Budget;
}

export type IssuedNonce = {
  outcome: "issued" | "rate_limited";
  issued_at: Date;
  expires_at: Date;
  retry_after: number;
};

/**
 * One call: the client's rate-limit hit, then (within the limit) the nonce. Its transaction does
 * not wait for the WAL flush: a nonce is short-lived and cheap to replace, so a database crash may
 * forget those issued in its last moments, whose sign-ins then fail as nonce_unknown and start
 * over. Replay protection is unchanged: spending a nonce commits synchronously, and that flush
 * covers the nonce's own insert, written before it. And anyone can ask for one.
 */
export async function issueNonce(
  db: Pick<Database, "batch">,
  issue: NonceIssue,
): Promise<IssuedNonce> {
  const [row] = await queryWithoutWaitingForFlush<IssuedNonce>(db, {
    text: `select outcome, issued_at, expires_at, retry_after
             from public.issue_nonce($1, $2, $3, $4, $5, $6, $7)`,
    params: [
      issue.nonce,
      issue.ttlSeconds,
      issue.address,
      issue.chainId,
      issue.client.bucket,
      issue.client.limit,
      issue.client.windowSeconds,
    ],
  });
  return row;
}

/** A proof that passed its checks, as public.sign_in_from_ip takes it. */
export interface SignIn {
  /** The client's proof budget; `counted` when the proof was already counted against it. */
  readonly client: Budget & { readonly counted: boolean };
  readonly nonce: string;
  /** Lowercase, as stored. */
  readonly walletAddress: string;
  readonly refreshTokenHash: Uint8Array;
  readonly refreshTokenTtlSeconds: number;
  /** The wallet's own budget of proofs, completed with the wallet by the database. */
  readonly wallet: PrefixBudget;
  readonly messageChainId: number;
  /** Null: the key signed (a key is the same creator on every chain); else the contract's chain. */
  readonly identityChainId: number | null;
  /** Kept with the session for the creator's sessions list. */
  readonly clientDescription: string | null;
}

export type SignInResult =
  | { outcome: "signed_in"; session_id: string; user_id: string; retry_after: null }
  | { outcome: "rate_limited"; session_id: null; user_id: null; retry_after: number }
  | {
    outcome: "nonce_unknown" | "nonce_used" | "nonce_expired" | "nonce_mismatch";
    session_id: null;
    user_id: null;
    retry_after: null;
  };

/**
 * One call (public.sign_in_from_ip): the client's count unless already taken, then
 * public.sign_in_with_nonce: the wallet's own rate limit, counted only now that the signature is
 * the wallet's (counted before, anyone could spend its budget with unsigned attempts and lock its
 * owner out); the nonce consumed by a conditional update, so two concurrent proofs with one nonce
 * get exactly one session; the wallet's creator created or reused; the session and its first
 * refresh token stored.
 */
export async function signIn(db: Queryable, signIn: SignIn): Promise<SignInResult> {
  const [result] = await db.query<SignInResult>(
    `select outcome, session_id, user_id, retry_after
       from public.sign_in_from_ip($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
    [
      signIn.client.counted ? null : signIn.client.bucket,
      signIn.client.limit,
      signIn.nonce,
      signIn.walletAddress,
      signIn.refreshTokenHash,
      signIn.refreshTokenTtlSeconds,
      signIn.wallet.prefix,
      signIn.wallet.limit,
      // One window for both budgets: the table gives every limit a minute.
      signIn.wallet.windowSeconds,
      signIn.messageChainId,
      signIn.identityChainId,
      signIn.clientDescription,
    ],
  );
  return result;
}

/** What public.admit_contract_check is given: the proof's nonce and wallet, and the budgets. */
export interface ContractCheck {
  readonly nonce: string;
  /** Lowercase. */
  readonly walletAddress: string;
  readonly chainId: number;
  /** The client's address; the database completes each budget's bucket with it and the wallet. */
  readonly client: string;
  readonly perClient: PrefixBudget;
  readonly perWallet: PrefixBudget;
  readonly perWalletPerClient: PrefixBudget;
  readonly checksPerNonce: number;
}

/**
 * One call: the nonce checked but not spent (and put to the chain at most `checksPerNonce` times),
 * and the RPC call counted against the client's budget, its budget for this wallet, and the
 * wallet's cap every client shares. `ok`, `rate_limited` or public.nonce_refusal's outcome.
 */
export async function admitContractCheck(
  db: Queryable,
  check: ContractCheck,
): Promise<{ outcome: string; retry_after: number | null }> {
  const [admitted] = await db.query<{ outcome: string; retry_after: number | null }>(
    `select outcome, retry_after
       from public.admit_contract_check($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
    [
      check.nonce,
      check.walletAddress,
      check.chainId,
      check.client,
      check.perClient.prefix,
      check.perClient.limit,
      check.perWallet.prefix,
      check.perWallet.limit,
      check.perClient.windowSeconds,
      check.perWalletPerClient.prefix,
      check.perWalletPerClient.limit,
      check.checksPerNonce,
    ],
  );
  return admitted;
}

/** The attempt's count in its window, and the rotated session when the token was spent. */
export type RefreshAttempt =
  & { hits: number; retry_after: number }
  & (
    | { session_id: string; user_id: string; wallet_address: string }
    | { session_id: null; user_id: null; wallet_address: null }
  );

/**
 * $1 the presented token's hash, $2 its successor's, $3 the client's bucket, $4 the window, $5 the
 * limit, $6 the retry key's commitment (or null), stored with the spent token. hit_rate_limit is
 * volatile, so its CTE runs exactly once, before the update reads it. When nothing was spent (over
 * the limit, or a token that is not live), only the count was written: count_only commits it
 * without waiting for the flush, since anyone can send refresh tokens (db.ts says why). A spend
 * waits for it.
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

/** A refresh: what it presents and stores, and the client's budget. */
export interface Rotation {
  readonly presented: Uint8Array;
  readonly successor: Uint8Array;
  /** The retry key's commitment, stored with the spent token; null when the client sent none. */
  readonly commitment: Uint8Array | null;
  readonly client: Budget;
}

/**
 * One statement: the client's attempt is counted first, and within its limit the presented token
 * is spent and its successor stored. Over the limit nothing is spent or looked up.
 */
export async function rotateRefreshToken(
  db: Queryable,
  rotation: Rotation,
): Promise<RefreshAttempt> {
  const [attempt] = await db.query<RefreshAttempt>(ROTATE, [
    rotation.presented,
    rotation.successor,
    rotation.client.bucket,
    rotation.client.windowSeconds,
    rotation.client.limit,
    rotation.commitment,
  ]);
  return attempt;
}

/** The presented token as stored: spent or not, its commitment, and whether a retry is in time. */
const PRESENTED = `select t.session_id, s.user_id, u.wallet_address, t.used_at is not null as used,
         (s.revoked_at is not null or s.expires_at <= now()) as revoked,
         t.retry_key_hash as commitment,
         coalesce(t.used_at > now() - make_interval(secs => $3)
           and exists (
             select 1 from public.auth_refresh_tokens n
              where n.token_hash = $2 and n.session_id = t.session_id and n.used_at is null
           ), false) as in_grace
    from public.auth_refresh_tokens t
    join public.auth_sessions s on s.id = t.session_id
    join public.wallet_users u on u.id = s.user_id
   where t.token_hash = $1`;

export type PresentedToken = {
  session_id: string;
  user_id: string;
  wallet_address: string;
  used: boolean;
  revoked: boolean;
  commitment: Uint8Array | null;
  /** Spent within `graceSeconds`, its successor (`successor`) still unused. */
  in_grace: boolean;
};

/** A token that was not spent just now, as stored; undefined when it never was. */
export async function presentedRefreshToken(
  db: Queryable,
  presented: Uint8Array,
  successor: Uint8Array,
  graceSeconds: number,
): Promise<PresentedToken | undefined> {
  const [known] = await db.query<PresentedToken>(PRESENTED, [presented, successor, graceSeconds]);
  return known;
}

/** Ends a session whose spent refresh token came back (theft detection). */
export async function revokeForReuse(db: Queryable, sessionId: string): Promise<void> {
  await db.query(
    `update public.auth_sessions set revoked_at = now(), revoked_reason = 'refresh_token_reuse'
      where id = $1 and revoked_at is null`,
    [sessionId],
  );
}

/**
 * Signs out `session` ("local"), or ("global", Supabase Auth's signOut scope) every live session of
 * its creator. One that already expired keeps expiry as its end.
 */
export async function endSessions(
  db: Queryable,
  session: SessionIdentity,
  scope: "local" | "global",
): Promise<void> {
  await db.query(
    scope === "global"
      ? `update public.auth_sessions set revoked_at = now(), revoked_reason = 'logout'
          where user_id = $1 and revoked_at is null and expires_at > now()`
      : `update public.auth_sessions set revoked_at = now(), revoked_reason = 'logout'
          where id = $1 and revoked_at is null`,
    [scope === "global" ? session.userId : session.sessionId],
  );
}
