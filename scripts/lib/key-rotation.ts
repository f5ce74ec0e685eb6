/**
 * Key rotation: re-encrypts every vault row still under an older key with the keyring's active
 * key, in batches of one transaction each. Stopping at any point loses nothing: finished rows are
 * under the active key and are never selected again, so running it again simply continues.
 *
 * updated_at is left as it is; the audit trigger records such an update as 'rotate', not 'put'.
 */
import type { Database, Queryable } from "../../functions/_shared/db/db.ts";
import type { SecretType } from "../../functions/_shared/vault/secret-types.ts";
import {
  type KeyFailure,
  keyFailure,
  type Keyring,
} from "../../functions/_shared/vault/vault-crypto.ts";

export const DEFAULT_BATCH_SIZE = 100;

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
  readonly problems: readonly RotationProblem[];
  /** True when the signal stopped the run early; run again to continue. */
  readonly interrupted: boolean;
  /** Rows per key id once the run ended (the whole table). */
  readonly rowsByKeyId: Readonly<Record<string, number>>;
}

export interface RotationOptions {
  readonly batchSize?: number;
  /** Checked between batches: an abort ends the run after the batch in progress commits. */
  readonly signal?: AbortSignal;
  /** Called after each committed batch, e.g. to print progress. */
  readonly onBatch?: (progress: { batch: number; rotated: number; skipped: number }) => void;
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
  await keyring.ready();
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  if (!Number.isSafeInteger(batchSize) || batchSize < 1) {
    throw new Error("The batch size must be a positive integer.");
  }

  let examined = 0, rotated = 0, skipped = 0, batches = 0;
  const problems: RotationProblem[] = [];
  // Keyset pagination: rows that cannot be rotated are stepped over rather than selected forever.
  let after: { userId: string; secretType: string } | null = null;
  let interrupted = false;

  for (;;) {
    if (options.signal?.aborted) {
      interrupted = true;
      break;
    }
    const batch = await asService(db, async (tx) => {
      // for update: a creator's concurrent put waits for this batch (or this batch for it), so a
      // fresh value is never overwritten with a re-encryption of the old one.
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
        const binding = { userId: row.user_id, secretType: row.secret_type };
        let value: string;
        try {
          value = await keyring.decrypt(
            { ciphertext: row.ciphertext, iv: row.iv, keyId: row.key_id },
            binding,
          );
        } catch (error) {
          const reason = keyFailure(error);
          if (reason === null) throw error;
          problems.push({ ...binding, keyId: row.key_id, reason });
          continue;
        }
        const sealed = await keyring.encrypt(value, binding);
        await tx.query(
          `update public.user_secrets set ciphertext = $3, iv = $4, key_id = $5
            where user_id = $1 and secret_type = $2`,
          [row.user_id, row.secret_type, sealed.ciphertext, sealed.iv, sealed.keyId],
        );
        batchRotated++;
      }
      return { rows, rotated: batchRotated };
    });
    if (batch.rows.length === 0) break;
    const last = batch.rows[batch.rows.length - 1];
    after = { userId: last.user_id, secretType: last.secret_type };
    batches++;
    examined += batch.rows.length;
    rotated += batch.rotated;
    skipped += batch.rows.length - batch.rotated;
    options.onBatch?.({ batch: batches, rotated, skipped });
    if (batch.rows.length < batchSize) break;
  }

  const counts = await asService(db, (tx) =>
    tx.query<{ key_id: string; rows: number }>(
      "select key_id, count(*)::int as rows from public.user_secrets group by key_id order by key_id",
    ));
  const rowsByKeyId = Object.fromEntries(counts.map((c) => [c.key_id, c.rows]));
  return {
    activeKeyId,
    examined,
    rotated,
    skipped,
    batches,
    problems,
    interrupted,
    rowsByKeyId,
  };
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
