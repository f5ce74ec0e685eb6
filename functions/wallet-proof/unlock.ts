/**
 * POST /wallet-proof/unlock: lets live runs reveal the creator's keys again after a lock, with a
 * fresh signature for `unlock`: a session alone can lock (user-secrets' POST /lock), and never
 * unlock, so a stolen session cannot undo the creator's lock.
 */
import type { SessionRoute } from "../_shared/auth/session-checks.ts";
import { json } from "../_shared/http/responses.ts";
import type { UnlockAnswer } from "./creator-control-answers.ts";
import { unlockReveals } from "./creator-controls-store.ts";
import {
  freshSignatureRequest,
  readSignedAction,
  type SignedActionDeps,
} from "./fresh-signature.ts";

export function unlockRoute(deps: SignedActionDeps): SessionRoute {
  return async function unlock(request, session) {
    const { action } = await readSignedAction(
      deps,
      request,
      session,
      "unlock",
      freshSignatureRequest,
    );
    await unlockReveals(deps.db, action);
    return json({ locked: false } satisfies UnlockAnswer);
  };
}
