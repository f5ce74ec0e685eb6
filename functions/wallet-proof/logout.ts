/** POST /wallet-proof/logout: ends this session, or (scope "global") every session of its creator. */
import { z } from "zod";
import type { AppConfig } from "../_shared/config/config.ts";
import type { Database } from "../_shared/db/db.ts";
import type { SessionTokens } from "../_shared/auth/session-tokens.ts";
import { readOptionalJson, requireSessionToken } from "../_shared/http/bodies.ts";
import { parseRequest } from "../_shared/http/request-issues.ts";
import { noContent } from "../_shared/http/responses.ts";
import type { Handler } from "../_shared/http/router.ts";

/** "local" (the default): this session; "global": every session of the creator. */
export const logoutRequest = z.strictObject({ scope: z.enum(["local", "global"]).optional() });

export interface LogoutDeps {
  readonly db: Database;
  readonly sessions: SessionTokens;
  readonly config: Pick<AppConfig, "publicApiKeys">;
}

export function logoutRoute({ db, sessions, config }: LogoutDeps): Handler {
  return async function logout(request) {
    const session = await sessions.verify(requireSessionToken(request, config.publicApiKeys));
    const { scope = "local" } = parseRequest(logoutRequest, await readOptionalJson(request));
    // "global" (Supabase Auth's signOut scope): every live session of this creator, e.g. after
    // losing a device. Only a live session of the creator can ask, so one creator never ends
    // another's sessions. One that already expired keeps expiry as its end.
    await db.query(
      scope === "global"
        ? `update public.auth_sessions set revoked_at = now(), revoked_reason = 'logout'
            where user_id = $1 and revoked_at is null and expires_at > now()`
        : `update public.auth_sessions set revoked_at = now(), revoked_reason = 'logout'
            where id = $1 and revoked_at is null`,
      [scope === "global" ? session.userId : session.sessionId],
    );
    return noContent();
  };
}
