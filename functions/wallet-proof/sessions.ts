/**
 * GET /wallet-proof/sessions: the creator's live sessions, newest first: when each began and was
 * last refreshed, how its client described itself, and which one is asking. Read as the creator
 * under row-level security (creator-controls-store.ts).
 */
import type { Database } from "../_shared/db/db.ts";
import type { SessionRoute } from "../_shared/auth/session-checks.ts";
import { json } from "../_shared/http/responses.ts";
import type { SessionsAnswer } from "./creator-control-answers.ts";
import { listSessions } from "./creator-controls-store.ts";

export function sessionsRoute({ db }: { readonly db: Database }): SessionRoute {
  return async function creatorSessions(_request, session) {
    const rows = await listSessions(db, session);
    return json(
      {
        sessions: rows.map((row) => ({
          id: row.id,
          current: row.id === session.sessionId,
          signedInAt: row.created_at.toISOString(),
          lastRefreshedAt: row.refreshed_at?.toISOString() ?? null,
          expiresAt: row.expires_at.toISOString(),
          client: row.client_description,
        })),
      } satisfies SessionsAnswer,
    );
  };
}
