/**
 * GET /user-secrets/export: what the service holds about the creator, to keep before leaving:
 * the account, whether live-run access is locked, the masked secrets (never a value) and the
 * activity (newest first, the first EXPORT_MAX_EVENTS; GET /activity pages on from the cursor
 * given). Counted against the creator's own export budget (its vault write limit, per minute),
 * once the session is known to be live.
 * The service keeps no run history of its own: the activity is its whole record of live runs.
 */
import { enforceRateLimit } from "../_shared/auth/rate-limit.ts";
import { budget } from "../_shared/config/limits.ts";
import type { SessionRoute } from "../_shared/auth/session-checks.ts";
import { json } from "../_shared/http/responses.ts";
import { creatorAccount, readActivity } from "./creator-controls-store.ts";
import { maskedSecret } from "./list.ts";
import type { AccountExport } from "./creator-control-answers.ts";
import { listSecrets, type VaultDeps } from "./vault-store.ts";

const EXPORT_MAX_EVENTS = 10_000;

export function exportRoute({ db, config }: VaultDeps): SessionRoute {
  return async function exportAccount(_request, session) {
    // The session first: an ended one (a thief's unexpired token after "sign out everywhere")
    // must not spend the owner's export budget.
    const account = await creatorAccount(db, session);
    await enforceRateLimit(
      db,
      budget(config.rateLimits, "vaultWritesPerMinute", "export", session.userId),
    );
    // Each read is its own statement: the list and activity reads end their transaction as the
    // creator's role, which may call nothing else.
    const [secrets, activity] = await Promise.all([
      listSecrets(db, session),
      readActivity(db, session, null, EXPORT_MAX_EVENTS),
    ]);
    return json(
      {
        exportedAt: new Date().toISOString(),
        creator: {
          id: session.userId,
          walletAddress: session.walletAddress,
          chainId: account.chainId,
          createdAt: account.createdAt.toISOString(),
        },
        liveRunAccess: {
          locked: account.lockedAt !== null,
          lockedAt: account.lockedAt?.toISOString() ?? null,
        },
        secrets: secrets.map(maskedSecret),
        activity: activity.events,
        activityNextCursor: activity.nextCursor,
      } satisfies AccountExport,
    );
  };
}
