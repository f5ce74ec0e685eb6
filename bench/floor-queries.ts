/**
 * The floor's reads and writes of the creator's secrets: the one indexed statement each route
 * cannot do without, and the JSON that route answers with. The bare server (bench/bare-server.ts)
 * and the profile's in-process floor (bench/profile-setup.ts) answer with these, so the floor the
 * bench measures and the one the profile times are the same code.
 */
import { type Database, queryWithoutWaitingForFlush } from "../functions/_shared/db/db.ts";
import { SECRET_TYPES } from "../functions/_shared/vault/secret-types.ts";

/** What GET /api/secrets reads: the creator's masked rows, in the registry's order. */
export const LIST = `select secret_type, updated_at, hint from public.user_secrets
  where user_id = $1 order by array_position($2::text[], secret_type)`;

/** What PUT /api/secrets writes: one upsert of a ciphertext row. */
export const UPSERT =
  `insert into public.user_secrets (user_id, secret_type, ciphertext, iv, key_id)
    values ($1, $2, $3, $4, 'k1')
  on conflict (user_id, secret_type) do update
    set ciphertext = excluded.ciphertext, iv = excluded.iv, updated_at = now()
  returning updated_at, xmax = 0 as created`;

/** What reveal reads: the creator's ciphertexts. */
export const CIPHERTEXTS =
  "select secret_type, ciphertext, iv, key_id from public.user_secrets where user_id = $1";

/**
 * The one audit row an audited reveal must commit. It names one type, as when the floor was set;
 * the route's event names the seven it read (migration 20261125060000), a slightly larger row.
 */
export const AUDIT_INSERT = `insert into public.secret_events (user_id, secret_types, action)
    values ($1, array['provider_a_api_key'], 'reveal')`;

/**
 * The read and the committed insert as one statement: one round trip on every engine. Behind a
 * pooler nothing is prepared, and each statement with parameters waits for its own Parse/Describe,
 * so the two as separate statements took about two round trips more than the route's one call.
 */
export const AUDITED_CIPHERTEXTS = `with audit as (${AUDIT_INSERT}) ${CIPHERTEXTS}`;

export type CiphertextRow = { secret_type: string; ciphertext: Uint8Array; key_id: string };

export function listBare(db: Database, user: string | null) {
  return db.query<{ secret_type: string; updated_at: Date; hint: string | null }>(LIST, [
    user,
    SECRET_TYPES,
  ]);
}

/** How the floor's write commits: as PUT does, or not waiting for the WAL flush, as the nonce. */
export type FloorCommit = "flushed" | "without waiting for the flush";

/** A random ciphertext and IV of the sizes the service stores, under key id `k1`. */
export function upsertBare(
  db: Database,
  user: string | null,
  type: string | null,
  commit: FloorCommit = "flushed",
) {
  const params = [
    user,
    type,
    crypto.getRandomValues(new Uint8Array(48)),
    crypto.getRandomValues(new Uint8Array(12)),
  ];
  type Upserted = { updated_at: Date; created: boolean };
  if (commit === "flushed") return db.query<Upserted>(UPSERT, params);
  // As the nonce sends it: the setting, then the write, in one transaction.
  return queryWithoutWaitingForFlush<Upserted>(db, { text: UPSERT, params });
}

export function ciphertextsBare(db: Database, user: string | null) {
  return db.query<CiphertextRow>(CIPHERTEXTS, [user]);
}

export function auditedCiphertextsBare(db: Database, user: string | null) {
  return db.query<CiphertextRow>(AUDITED_CIPHERTEXTS, [user]);
}

/**
 * Reveal's audited floor until 2026-11-25, measured beside the one above (bench/floor-changes.ts):
 * the read and the insert as two statements of one batch.
 */
export async function auditedCiphertextsInTwoStatements(db: Database, user: string | null) {
  const [read, audit] = await db.batch([
    { text: CIPHERTEXTS, params: [user] },
    { text: AUDIT_INSERT, params: [user] },
  ]);
  if (read.status === "rejected") throw read.reason;
  if (audit.status === "rejected") throw audit.reason;
  return read.value as CiphertextRow[];
}

export async function listAnswer(db: Database, user: string | null): Promise<Response> {
  const rows = await listBare(db, user);
  return Response.json({
    secrets: rows.map((row) => ({
      secretType: row.secret_type,
      updatedAt: row.updated_at.toISOString(),
      hint: row.hint,
    })),
  });
}

export async function upsertAnswer(
  db: Database,
  user: string | null,
  type: string | null,
  commit: FloorCommit = "flushed",
): Promise<Response> {
  const [row] = await upsertBare(db, user, type, commit);
  return Response.json({
    secretType: type,
    updatedAt: row.updated_at.toISOString(),
    created: row.created,
  });
}

/** What reveal answers, by the ciphertexts' sizes (nothing is decrypted). */
export function ciphertextsAnswer(rows: readonly CiphertextRow[]): Response {
  return Response.json({
    secrets: rows.map((row) => ({ secretType: row.secret_type, bytes: row.ciphertext.length })),
  });
}
