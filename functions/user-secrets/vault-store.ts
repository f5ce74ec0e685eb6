/**
 * The vault's reads, writes, reveals and live-run lock, each one call of a checked database
 * function: the function checks that the session is live, counts the request against its limits
 * (writes and reveals) and does the work, all in one statement, so one round trip and one
 * transaction even through a pooler that prepares nothing. Writes, reveals and the lock are
 * security definer: `authenticated` writes nothing. The list reads as the creator, under row-level
 * security. Only the service's own connection may execute them.
 */
import type { AppConfig } from "../_shared/config/app-config.ts";
import { type Budget, type PrefixBudget, prefixBudget } from "../_shared/config/limits.ts";
import { type Database, type Queryable, queryWithoutWaitingForFlush } from "../_shared/db/db.ts";
import { rateLimited } from "../_shared/auth/rate-limit.ts";
import { SECRET_TYPES, type SecretType } from "../../protocol/secret-types.ts";
import { sessionEnded, type TokenIdentity } from "../_shared/auth/session-tokens.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import type { SealedSecret } from "../_shared/vault/vault-crypto.ts";

/** The vault's budgets (config/limits.ts); its functions complete each bucket with the creator. */
export interface VaultLimits {
  /** PUTs and DELETEs per creator. */
  readonly write: PrefixBudget;
  /** Locks per creator, under the writes' limit. */
  readonly lock: PrefixBudget;
  /** Reveals per creator. */
  readonly reveal: PrefixBudget;
  /** Reveals per live-run credential, all creators together (completed with its bucket key). */
  readonly credential: PrefixBudget;
}

/** What a route that counts against the creator's vault limits is given. */
export interface VaultDeps {
  readonly db: Database;
  readonly config: Pick<AppConfig, "rateLimits">;
}

export function vaultLimits(rateLimits: AppConfig["rateLimits"]): VaultLimits {
  return {
    write: prefixBudget(rateLimits, "vaultWritesPerMinute", "write"),
    lock: prefixBudget(rateLimits, "vaultWritesPerMinute", "lock"),
    reveal: prefixBudget(rateLimits, "revealsPerMinute", "creator"),
    credential: prefixBudget(rateLimits, "revealsPerTokenPerMinute", "credential"),
  };
}

export type StoredRow = {
  readonly secret_type: SecretType;
  readonly ciphertext: Uint8Array;
  readonly iv: Uint8Array;
  readonly key_id: string;
  readonly updated_at: Date;
  /** The reveal's event, as digits: what a decryption failure takes back (recordRevealFailure). */
  readonly event_id: string;
};

type Outcome = { outcome: string; retry_after: number | null };

/**
 * A reveal's credential outcome the caller acts on before it becomes an error: an unknown,
 * revoked or expired credential (counted against the client's budget), or one past its own limit
 * (logged with its name).
 */
export class CredentialRefusal extends Error {
  constructor(
    readonly outcome: "credential_refused" | "credential_rate_limited",
    readonly credentialName: string | null,
    readonly retryAfter: number,
  ) {
    super(outcome);
    this.name = "CredentialRefusal";
  }
}

/** Turns the functions' refusals into the service's errors. */
function refused(row: Outcome): never {
  if (row.outcome === "rate_limited") throw rateLimited(row.retry_after ?? 1);
  if (row.outcome === "out_of_scope") throw outOfScope();
  if (row.outcome === "session_revoked") throw sessionEnded();
  if (row.outcome === "vault_locked") throw vaultLocked();
  throw new Error(`unexpected vault outcome ${row.outcome}`);
}

/** A reveal refused while the creator has locked live-run access (lock.ts). */
function vaultLocked(): ServiceError {
  return new ServiceError(
    "vault_locked",
    "The creator has locked live-run access to these keys; only the creator can unlock it, " +
      "with a wallet signature.",
  );
}

/** A reveal asking for a type outside its credential's scope: nothing read, and recorded. */
function outOfScope(): ServiceError {
  return new ServiceError(
    "reveal_out_of_scope",
    "This live-run credential may not reveal every type asked for; ask for the types it was " +
      "created with, or have the operator create a credential for this service that covers them.",
  );
}

/**
 * `types` as a Postgres array literal, which both drivers send as it is. Secret types are plain
 * identifiers (protocol/secret-types.ts), so nothing needs quoting; the drivers' own array encoding
 * escapes every element with two regular expressions, on every list and reveal.
 */
function secretTypesLiteral(types: readonly SecretType[]): string {
  return `{${types.join(",")}}`;
}
const EVERY_TYPE_LITERAL = secretTypesLiteral(SECRET_TYPES);

export type MaskedRow = {
  readonly secret_type: SecretType;
  readonly updated_at: Date;
  readonly hint: string | null;
  /**
   * When a live run last released it since it was saved (a reveal that then failed to decrypt does
   * not count); null if never. Kept beside the trail, so it outlives the trail's retention.
   */
  readonly last_used_at: Date | null;
  /** The live-run credential's name on that reveal; null if none named (issue 42). */
  readonly last_used_by: string | null;
};

/**
 * The creator's stored types, times and hints (never a value), in SECRET_TYPES order. The read
 * runs as the creator with its claims, so row-level security, not only the query's own filter,
 * decides which rows are reachable; when it finds none, public.list_user_secrets checks the session
 * itself, to tell an ended session from an empty vault.
 */
export async function listSecrets(db: Queryable, session: TokenIdentity): Promise<MaskedRow[]> {
  const rows = await db.query<MaskedRow & { live: boolean }>(
    `select live, secret_type, updated_at, hint, last_used_at, last_used_by
       from public.list_user_secrets($1, $2, $3, $4::text[])`,
    [JSON.stringify(session.claims), session.sessionId, session.userId, EVERY_TYPE_LITERAL],
  );
  if (rows.length > 0 && !rows[0].live) throw sessionEnded();
  return rows.map((row) =>
    row.hint === null || SHOWN_HINT.test(row.hint) ? row : { ...row, hint: null }
  );
}

// A hint as it may be shown: "…" and four printable ASCII characters. A stored hint can be of
// spaces or invisible characters, which would pass for the key's own.
const SHOWN_HINT = /^…[\x21-\x7e]{4}$/;

export async function putSecret(
  db: Queryable,
  session: TokenIdentity,
  secretType: SecretType,
  sealed: SealedSecret,
  hint: string | null,
  limits: VaultLimits,
): Promise<{ updatedAt: Date; created: boolean }> {
  const [row] = await db.query<Outcome & { updated_at: Date; created: boolean }>(
    `select outcome, updated_at, created, retry_after
       from public.put_user_secret($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [
      session.sessionId,
      session.userId,
      secretType,
      sealed.ciphertext,
      sealed.iv,
      sealed.keyId,
      hint,
      limits.write.prefix,
      limits.write.limit,
      limits.write.windowSeconds,
    ],
  );
  if (row.outcome !== "stored") refused(row);
  return { updatedAt: row.updated_at, created: row.created };
}

/** False when no secret of that type is stored for the creator. */
export async function deleteSecret(
  db: Queryable,
  session: TokenIdentity,
  secretType: SecretType,
  limits: VaultLimits,
): Promise<boolean> {
  const [row] = await db.query<Outcome>(
    "select outcome, retry_after from public.delete_user_secret($1, $2, $3, $4, $5, $6)",
    [
      session.sessionId,
      session.userId,
      secretType,
      limits.write.prefix,
      limits.write.limit,
      limits.write.windowSeconds,
    ],
  );
  if (row.outcome === "deleted") return true;
  if (row.outcome === "not_found") return false;
  refused(row);
}

/**
 * The stored rows of `secretTypes`, in that order, read in the statement that writes their
 * 'reveal' event, and handed to `open` as they arrive, while that statement's COMMIT is under way.
 * What `open` makes is returned only once the commit succeeded: nothing made from the rows leaves
 * before the event is durable, and a refusal (an ended session, a limit, a locked vault) throws
 * after its count (and a locked vault's or an out-of-scope reveal's refused-reveal event) was
 * committed. The live-run credential is checked in the same statement (`credential.hash`, null for
 * the legacy token); a credential refusal is thrown as a CredentialRefusal. `everyType`: the
 * request named no types, so `secretTypes` (every type) is narrowed to the credential's scope.
 */
export function readForReveal<R>(
  db: Database,
  session: TokenIdentity,
  secretTypes: readonly SecretType[],
  credential: { readonly hash: Uint8Array | null; readonly bucket: string },
  everyType: boolean,
  limits: VaultLimits,
  retentionDays: number | null,
  open: (rows: StoredRow[]) => R | Promise<R>,
): Promise<R> {
  return db.queryOverlappingCommit<Outcome & StoredRow & { credential_name: string | null }, R>({
    text: `select outcome, secret_type, ciphertext, iv, key_id, updated_at, retry_after,
         credential_name, event_id::text as event_id
       from public.reveal_user_secrets($1, $2, $3::text[], $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
    params: [
      session.sessionId,
      session.userId,
      secretTypesLiteral(secretTypes),
      credential.bucket,
      limits.reveal.prefix,
      limits.reveal.limit,
      limits.credential.prefix,
      limits.credential.limit,
      // One window for both budgets: the table gives every limit a minute.
      limits.reveal.windowSeconds,
      credential.hash,
      everyType,
      retentionDays,
    ],
  }, (rows) => {
    const first = rows[0];
    if (
      first?.outcome === "credential_refused" || first?.outcome === "credential_rate_limited"
    ) {
      throw new CredentialRefusal(first.outcome, first.credential_name, first.retry_after ?? 1);
    }
    if (rows.length > 0 && first.outcome !== "revealed") refused(first);
    return open(rows);
  });
}

/**
 * Records the types a recorded reveal (`revealEventId`) then failed to decrypt, and takes that
 * reveal back from its keys' last use: it released nothing (a second write, on failure only).
 */
export async function recordRevealFailure(
  db: Queryable,
  session: TokenIdentity,
  secretTypes: readonly SecretType[],
  revealEventId: string,
): Promise<void> {
  await db.query("select public.record_reveal_failure($1, $2, $3::text[], $4::bigint)", [
    session.sessionId,
    session.userId,
    secretTypes,
    revealEventId,
  ]);
}

/** What counting one refused reveal found: its window's count, the seconds left, the audit. */
export interface RevealRefusal {
  readonly hits: number;
  readonly retryAfter: number;
  /** Whether a 'reveal_refused' event was written for the session's creator. */
  readonly recorded: boolean;
}

/**
 * Counts a reveal refused for its server token against `client` and, with a live `session`, against
 * `creator` (completed with the session's creator), and records it as a 'reveal_refused' event
 * within that budget. One statement, committed
 * without waiting for the flush: anyone can send a wrong token, and waiting would let anyone make
 * the database flush at will.
 */
export async function refuseReveal(
  db: Pick<Database, "batch">,
  client: Budget,
  creator: PrefixBudget,
  session: TokenIdentity | null,
): Promise<RevealRefusal> {
  const [row] = await queryWithoutWaitingForFlush<
    { hits: number; retry_after: number; recorded: boolean }
  >(db, {
    text: "select hits, retry_after, recorded from public.refuse_reveal($1, $2, $3, $4, $5, $6)",
    params: [
      client.bucket,
      client.limit,
      client.windowSeconds,
      session?.sessionId ?? null,
      session?.userId ?? null,
      creator.prefix,
    ],
  });
  return { hits: row.hits, retryAfter: row.retry_after, recorded: row.recorded };
}

/**
 * Locks live-run access (counted as a vault write): from now on public.reveal_user_secrets refuses
 * the creator's keys, until an unlock with a fresh signature (wallet-proof). When it was locked:
 * the first lock's time if it already was.
 */
export async function lockReveals(
  db: Queryable,
  session: TokenIdentity,
  limits: VaultLimits,
): Promise<Date> {
  const [row] = await db.query<Outcome & { locked_at: Date | null }>(
    "select outcome, locked_at, retry_after from public.lock_reveals($1, $2, $3, $4, $5)",
    [
      session.sessionId,
      session.userId,
      limits.lock.prefix,
      limits.lock.limit,
      limits.lock.windowSeconds,
    ],
  );
  if (row.outcome !== "locked") refused(row);
  return row.locked_at!;
}
