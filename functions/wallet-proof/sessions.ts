/**
 * GET /wallet-proof/sessions: the creator's live sessions, newest first: when each began and was
 * last refreshed, how its client described itself, and which one is asking. Read as the creator
 * under row-level security (public.list_creator_sessions), so no session of another creator can
 * be listed whatever the query says.
 */
import type { AppConfig } from "../_shared/config/config.ts";
import type { Database } from "../_shared/db/db.ts";
import { sessionEnded, type SessionTokens } from "../_shared/auth/session-tokens.ts";
import { requireSessionToken } from "../_shared/http/bodies.ts";
import { json } from "../_shared/http/responses.ts";
import type { Handler } from "../_shared/http/router.ts";
import type { SessionsAnswer } from "./creator-answers.ts";

type SessionRow = {
  id: string;
  created_at: Date;
  refreshed_at: Date | null;
  expires_at: Date;
  client_description: string | null;
};

export interface SessionsDeps {
  readonly db: Database;
  readonly sessions: SessionTokens;
  readonly config: Pick<AppConfig, "publicApiKeys">;
}

export function sessionsRoute({ db, sessions, config }: SessionsDeps): Handler {
  return async function listSessions(request) {
    const session = await sessions.verifyToken(requireSessionToken(request, config.publicApiKeys));
    const rows = await db.query<SessionRow>(
      `select id, created_at, refreshed_at, expires_at, client_description
         from public.list_creator_sessions($1, $2)`,
      [JSON.stringify(session.claims), session.userId],
    );
    // A live session lists itself: none at all means the asking session has ended.
    if (rows.length === 0) throw sessionEnded();
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
