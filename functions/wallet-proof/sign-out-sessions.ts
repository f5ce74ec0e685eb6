/**
 * POST /wallet-proof/sessions/sign-out: ends the named sessions of the creator, any of them (this
 * one included), with a fresh signature for `sign_out_sessions`. Every id must be one of this
 * creator's sessions, else 404 session_not_found and nothing ends: another creator's session is
 * out of reach, and is answered as an unknown id is.
 */
import { z } from "zod";
import type { SessionRoute } from "../_shared/auth/session-checks.ts";
import { json } from "../_shared/http/responses.ts";
import type { SignOutAnswer } from "./creator-answers.ts";
import { signOutSessions } from "./creator-store.ts";
import { type ActDeps, confirmedAct, freshSignatureFields } from "./fresh-signature.ts";

/** At most this many sessions in one request (the list shows every live one). */
export const MAX_SESSIONS_PER_SIGN_OUT = 100;

export const signOutSessionsRequest = z.strictObject({
  ...freshSignatureFields,
  sessionIds: z.array(
    z.string().regex(
      /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/,
      "must be a session id (a UUID)",
    ),
  ).min(1).max(MAX_SESSIONS_PER_SIGN_OUT),
});

export function signOutSessionsRoute(deps: ActDeps): SessionRoute {
  return async function signOut(request, session) {
    const { act, body } = await confirmedAct(
      deps,
      request,
      session,
      "sign_out_sessions",
      signOutSessionsRequest,
    );
    const ids = body.sessionIds.map((id) => id.toLowerCase());
    return json({ signedOut: await signOutSessions(deps.db, act, ids) } satisfies SignOutAnswer);
  };
}
