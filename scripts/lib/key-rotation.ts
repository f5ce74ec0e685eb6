/**
 * Key rotation: re-encrypts every vault row still under an older key with the keyring's active
 * key, in batches of one transaction each. Stopping at any point loses nothing: finished rows are
 * under the active key and are never selected again, so running it again simply continues.
 *
 * A pass walks the table once in key order, so a row written under an older key behind it (by an
 * instance that still has the old keyring) is not in that pass: passes repeat from the start, up
 * to MAX_PASSES, until no such row is left, and any still left are reported as `remaining`.
 *
 * updated_at is left as it is; the audit trigger records such an update as 'rotate', not 'put'.
 */
import type { Database, Queryable } from "../../functions/_shared/db/db.ts";
import type { SecretType } from "../../protocol/secret-types.ts";
import {
  type KeyFailure,
  keyFailure,
  type Keyring,
} from "../../functions/_shared/vault/vault-crypto.ts";

export const DEFAULT_BATCH_SIZE = 100;

/**
 * vault:rotate's exit status. `refused` is also what parseOrExit and stepOrExit exit with: the
 * configuration or database refused before anything ran.
 */
export const ROTATION_EXIT = { done: 0, refused: 1, interrupted: 2, rowsLeft: 3 } as const;
/** Enough for the stragglers of a deploy; more would chase a writer that was never updated. */
export const MAX_PASSES = 3;

/** A row that could not be rotated: named by creator, type and key id, never by content. */
export interface RotationProblem {
  readonly userId: string;
  readonly secretType: SecretType;
  readonly keyId: string;
  readonly reason: KeyFailure;
}

export interface RotationReport {
  readonly activeKeyId: string;
  /** Rows found under an older key during this run. */
  readonly examined: number;
  /** Rows re-encrypted under the active key during this run. */
  readonly rotated: number;
  /** Rows left as they were because they could not be decrypted (see `problems`). */
  readonly skipped: number;
  readonly batches: number;
  /** Walks of the table from the start (see MAX_PASSES). */
  readonly passes: number;
  readonly problems: readonly RotationProblem[];
  /**
   * Rows still under an older key once the last pass ended, not counting `problems`: written
   * meanwhile by a process still encrypting with an older key. Run again once none does. 0 when
   * the run was interrupted.
   */
  readonly remaining: number;
  /** True when the signal stopped the run early; run again to continue. */
  readonly interrupted: boolean;
  /** Rows per key id once the run ended (the whole table). */
  readonly rowsByKeyId: Readonly<Record<string, number>>;
  /**
   * Set when a row already stored under the active key id does not open with the configured key
   * (the id was given other bytes, e.g. ENCRYPTION_KEY changed in place): nothing was rotated,
   * since rows re-encrypted now would carry that id with bytes the older rows do not.
   */
  readonly activeKeyMismatch: KeyFailure | null;
}

export interface RotationOptions {
  readonly batchSize?: number;
  /** Checked between batches: an abort ends the run after the batch in progress commits. */
  readonly signal?: AbortSignal;
  /** Called (and awaited) after each committed batch, e.g. to print progress. */
  readonly onBatch?: (
    progress: { batch: number; rotated: number; skipped: number },
  ) => void | Promise<void>;
}

type Row = {
  user_id: string;
  secret_type: SecretType;
  ciphertext: Uint8Array;
  iv: Uint8Array;
  key_id: string;
};

export async function rotateKeys(
  db: Database,
  keyring: Keyring,
  options: RotationOptions = {},
): Promise<RotationReport> {
  const activeKeyId = keyring.activeKeyId;
  if (activeKeyId === null) throw new Error("The keyring is empty: configure ENCRYPTION_KEYS.");
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  if (!Number.isSafeInteger(batchSize) || batchSize < 1) {
    throw new Error("The batch size must be a positive integer.");
  }

  const activeKeyMismatch = await activeKeyFailure(db, keyring, activeKeyId);
  if (activeKeyMismatch !== null) {
    return {
      activeKeyId,
      examined: 0,
      rotated: 0,
      skipped: 0,
      batches: 0,
      passes: 0,
      problems: [],
      remaining: 0,
      interrupted: false,
      rowsByKeyId: await rowsByKeyId(db),
      activeKeyMismatch,
    };
  }

  let rotated = 0, batches = 0, passes = 0;
  const problems: RotationProblem[] = [];
  /** Rows known not to decrypt: stepped over by later passes, and reported once. */
  const unreadable = new Set<string>();
  const rowKey = (row: { user_id: string; secret_type: string }) =>
    `${row.user_id}/${row.secret_type}`;
  let interrupted = false;
  let remaining = 0;

  /** One walk of the table in key order; false when the signal stopped it. */
  async function pass(): Promise<boolean> {
    // Keyset pagination: rows that cannot be rotated are stepped over rather than selected forever.
    let after: { userId: string; secretType: string } | null = null;
    for (;;) {
      if (options.signal?.aborted) return false;
      const batch = await asService(db, async (tx) => {
        // for update: a creator's concurrent put waits for this batch (or this batch for it), so
        // a fresh value is never overwritten with a re-encryption of the old one.
        const rows = await tx.query<Row>(
          `select user_id, secret_type, ciphertext, iv, key_id from public.user_secrets
            where key_id <> $1
              and ($2::uuid is null or (user_id, secret_type) > ($2::uuid, $3::text))
            order by user_id, secret_type
            limit $4
            for update`,
          [activeKeyId, after?.userId ?? null, after?.secretType ?? null, batchSize],
        );
        let batchRotated = 0;
        for (const row of rows) {
          if (unreadable.has(rowKey(row))) continue;
          const binding = { userId: row.user_id, secretType: row.secret_type };
          const opened = openRow(keyring, row);
          if ("failure" in opened) {
            unreadable.add(rowKey(row));
            // Each unreadable row is recorded once (later passes step over it): skipped rows are
            // exactly the problems.
            problems.push({ ...binding, keyId: row.key_id, reason: opened.failure });
            continue;
          }
          const sealed = keyring.encrypt(opened.value, binding);
          await tx.query(
            `update public.user_secrets set ciphertext = $3, iv = $4, key_id = $5
              where user_id = $1 and secret_type = $2`,
            [row.user_id, row.secret_type, sealed.ciphertext, sealed.iv, sealed.keyId],
          );
          batchRotated++;
        }
        return { rows, rotated: batchRotated };
      });
      if (batch.rows.length === 0) return true;
      const last = batch.rows[batch.rows.length - 1];
      after = { userId: last.user_id, secretType: last.secret_type };
      batches++;
      rotated += batch.rotated;
      await options.onBatch?.({ batch: batches, rotated, skipped: problems.length });
      if (batch.rows.length < batchSize) return true;
    }
  }

  while (passes < MAX_PASSES) {
    passes++;
    // Counted after a whole pass only: an interrupted one leaves 0, since it may have reached them.
    remaining = 0;
    if (!(await pass())) {
      interrupted = true;
      break;
    }
    // Counted where the rows are, leaving out those known not to decrypt (problems, not work left).
    const [left] = await asService(db, (tx) =>
      tx.query<{ rows: number }>(
        `select count(*)::int as rows from public.user_secrets
          where key_id <> $1
            and (user_id, secret_type) not in (select * from unnest($2::uuid[], $3::text[]))`,
        [activeKeyId, problems.map((p) => p.userId), problems.map((p) => p.secretType)],
      ));
    remaining = left.rows;
    if (remaining === 0) break;
  }

  return {
    activeKeyId,
    examined: rotated + problems.length,
    rotated,
    skipped: problems.length,
    batches,
    passes,
    problems,
    remaining,
    interrupted,
    rowsByKeyId: await rowsByKeyId(db),
    activeKeyMismatch: null,
  };
}

/** Whether a row already under the active key id opens with the configured key (one is enough). */
async function activeKeyFailure(
  db: Database,
  keyring: Keyring,
  activeKeyId: string,
): Promise<KeyFailure | null> {
  const [row] = await asService(db, (tx) =>
    tx.query<Row>(
      `select user_id, secret_type, ciphertext, iv, key_id from public.user_secrets
        where key_id = $1 order by user_id, secret_type limit 1`,
      [activeKeyId],
    ));
  if (row === undefined) return null;
  const opened = openRow(keyring, row);
  return "failure" in opened ? opened.failure : null;
}

/** The row's value, or why its key cannot open it; any other failure is thrown. */
function openRow(
  keyring: Keyring,
  row: Row,
): { readonly value: string } | { readonly failure: KeyFailure } {
  try {
    return {
      value: keyring.decrypt(
        { ciphertext: row.ciphertext, iv: row.iv, keyId: row.key_id },
        { userId: row.user_id, secretType: row.secret_type },
      ),
    };
  } catch (error) {
    const failure = keyFailure(error);
    if (failure === null) throw error;
    return { failure };
  }
}

async function rowsByKeyId(db: Database): Promise<Record<string, number>> {
  const counts = await asService(db, (tx) =>
    tx.query<{ key_id: string; rows: number }>(
      "select key_id, count(*)::int as rows from public.user_secrets group by key_id order by key_id",
    ));
  return Object.fromEntries(counts.map((c) => [c.key_id, c.rows]));
}

/**
 * As service_role, which bypasses row-level security: rotation must see every creator's rows,
 * and a connection whose own role RLS would filter must not report "nothing to do".
 */
function asService<T>(db: Database, work: (tx: Queryable) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await tx.query("set local role service_role");
    return await work(tx);
  });
}
