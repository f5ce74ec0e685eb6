/** POST /wallet-proof/logout: ends this session, or (scope "global") every session of its creator. */
import { z } from "zod";
import type { Database } from "../_shared/db/db.ts";
import type { SessionRoute } from "../_shared/auth/session-checks.ts";
import { readOptionalJson } from "../_shared/http/bodies.ts";
import { parseRequest } from "../_shared/http/request-issues.ts";
import { noContent } from "../_shared/http/responses.ts";
import { endSessions } from "./sign-in-store.ts";

/** "local" (the default): this session; "global": every session of the creator. */
export const logoutRequest = z.strictObject({ scope: z.enum(["local", "global"]).optional() });

export function logoutRoute({ db }: { readonly db: Database }): SessionRoute {
  return async function logout(request, session) {
    const { scope = "local" } = parseRequest(logoutRequest, await readOptionalJson(request));
    // "global", e.g. after losing a device: only a live session of the creator can ask, so one
    // creator never ends another's sessions.
    await endSessions(db, session, scope);
    return noContent();
  };
}
