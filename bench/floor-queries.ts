/**
 * The floor's read and write of the creator's secrets: the one indexed statement each route
 * cannot do without, and the JSON that route answers with. The bare server (bench/bare-server.ts)
 * and the profile's in-process floor (bench/profile-setup.ts) answer with these, so the floor the
 * bench measures and the one the profile times are the same code.
 */
import type { Database } from "../functions/_shared/db/db.ts";
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

export function listBare(db: Database, user: string | null) {
  return db.query<{ secret_type: string; updated_at: Date; hint: string | null }>(LIST, [
    user,
    SECRET_TYPES,
  ]);
}

/** A random ciphertext and IV of the sizes the service stores, under key id `k1`. */
export function upsertBare(db: Database, user: string | null, type: string | null) {
  return db.query<{ updated_at: Date; created: boolean }>(UPSERT, [
    user,
    type,
    crypto.getRandomValues(new Uint8Array(48)),
    crypto.getRandomValues(new Uint8Array(12)),
  ]);
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
): Promise<Response> {
  const [row] = await upsertBare(db, user, type);
  return Response.json({
    secretType: type,
    updatedAt: row.updated_at.toISOString(),
    created: row.created,
  });
}
