/** GET /user-secrets/lock: whether the creator has locked live-run access, and since when. */
import type { AppConfig } from "../_shared/config/config.ts";
import type { Database } from "../_shared/db/db.ts";
import type { SessionTokens } from "../_shared/auth/session-tokens.ts";
import { requireSessionToken } from "../_shared/http/bodies.ts";
import { json } from "../_shared/http/responses.ts";
import type { Handler } from "../_shared/http/router.ts";
import type { LockState } from "./control-answers.ts";
import { creatorAccount } from "./vault-lock.ts";

export interface LockStateDeps {
  readonly db: Database;
  readonly sessions: SessionTokens;
  readonly config: Pick<AppConfig, "publicApiKeys">;
}

export function lockStateRoute({ db, sessions, config }: LockStateDeps): Handler {
  return async function lockState(request) {
    const session = await sessions.verifyToken(requireSessionToken(request, config.publicApiKeys));
    const { lockedAt } = await creatorAccount(db, session);
    return json(
      { locked: lockedAt !== null, lockedAt: lockedAt?.toISOString() ?? null } satisfies LockState,
    );
  };
}
