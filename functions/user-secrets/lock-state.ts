/** GET /user-secrets/lock: whether the creator has locked live-run access, and since when. */
import type { Database } from "../_shared/db/db.ts";
import type { SessionRoute } from "../_shared/auth/session-checks.ts";
import { json } from "../_shared/http/responses.ts";
import { creatorAccount } from "./creator-controls-store.ts";
import type { LockState } from "./creator-control-answers.ts";

export function lockStateRoute({ db }: { readonly db: Database }): SessionRoute {
  return async function lockState(_request, session) {
    const { lockedAt } = await creatorAccount(db, session);
    return json(
      { locked: lockedAt !== null, lockedAt: lockedAt?.toISOString() ?? null } satisfies LockState,
    );
  };
}
