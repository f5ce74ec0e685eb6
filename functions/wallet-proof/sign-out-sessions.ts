/**
 * POST /wallet-proof/sessions/sign-out: ends the named sessions of the creator, any of them (this
 * one included), with a fresh signature for `sign_out_sessions` whose message names exactly those
 * sessions (its resources, asked for with the nonce). Every id must be one of this
 * creator's sessions, else 404 session_not_found and nothing ends: another creator's session is
 * out of reach, and is answered as an unknown id is.
 */
import { z } from "zod";
import type { SessionRoute } from "../_shared/auth/session-checks.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import { json } from "../_shared/http/responses.ts";
import type { SignOutAnswer } from "./creator-control-answers.ts";
import { signOutSessions } from "./creator-controls-store.ts";
import {
  freshSignatureFields,
  readSignedAction,
  type SignedActionDeps,
} from "./fresh-signature.ts";

/**
 * At most this many sessions in one request (the list shows every live one): each is a line of the
 * signed message, which is at most MAX_MESSAGE_LENGTH characters.
 */
export const MAX_SESSIONS_PER_SIGN_OUT = 50;

/** The session ids a sign-out names: in its nonce's request, and again with its signature. */
export const sessionIdsField = z.array(
  z.string().regex(
    /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/,
    "must be a session id (a UUID)",
  ),
).min(1).max(MAX_SESSIONS_PER_SIGN_OUT);

/**
 * The EIP-4361 resources of a sign-out message: one `urn:uuid:<id>` per session (RFC 4122's URN),
 * in lower case, each once, so the wallet shows which sessions the signature ends.
 */
export function sessionResources(sessionIds: readonly string[]): string[] {
  return [...new Set(sessionIds.map((id) => `urn:uuid:${id.toLowerCase()}`))];
}

export const signOutSessionsRequest = z.strictObject({
  ...freshSignatureFields,
  sessionIds: sessionIdsField,
});

export function signOutSessionsRoute(deps: SignedActionDeps): SessionRoute {
  return async function signOut(request, session) {
    const { action, body } = await readSignedAction(
      deps,
      request,
      session,
      "sign_out_sessions",
      signOutSessionsRequest,
    );
    // The signature covers the sessions its message names: a message signed for some sessions
    // (one a thief's, say, shown to the owner) cannot end others.
    const named = new Set(action.signer.resources);
    const asked = sessionResources(body.sessionIds);
    if (named.size !== asked.length || asked.some((resource) => !named.has(resource))) {
      throw new ServiceError(
        "purpose_mismatch",
        "The signed message names other sessions than sessionIds: sign the message that came " +
          "with a nonce asked for these sessions.",
      );
    }
    const ids = body.sessionIds.map((id) => id.toLowerCase());
    return json({ signedOut: await signOutSessions(deps.db, action, ids) } satisfies SignOutAnswer);
  };
}
