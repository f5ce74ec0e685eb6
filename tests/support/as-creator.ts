/**
 * Runs test statements as a creator: in one transaction with `role authenticated` and the
 * creator's JWT claims set locally, so row-level security, not only the queries' own filters,
 * decides which rows are reachable. Both settings end with the transaction. Production does the
 * same, with the session's liveness, in one call of public.list_user_secrets (vault-store.ts).
 */
import type { CreatorClaims, Database, Queryable } from "../../functions/_shared/db/db.ts";

export type { CreatorClaims } from "../../functions/_shared/db/db.ts";

export function asCreator<T>(
  db: Database,
  claims: CreatorClaims,
  work: (tx: Queryable) => Promise<T>,
): Promise<T> {
  return db.transaction(async (tx) => {
    await tx.query(
      "select set_config('request.jwt.claims', $1, true), set_config('role', 'authenticated', true)",
      [JSON.stringify(claims)],
    );
    return await work(tx);
  });
}
