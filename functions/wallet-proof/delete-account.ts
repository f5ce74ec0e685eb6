/**
 * DELETE /wallet-proof/account: deletes the creator, with a fresh signature for `delete_account`.
 * Its secrets, sessions, rate-limit windows and wallet mapping go in one transaction with the
 * nonce's spending; nonce-use records and the audit trail stay, unlinked (public.delete_account
 * says how). A later sign-in with the same wallet is a new creator with an empty vault.
 */
import type { SessionRoute } from "../_shared/auth/session-checks.ts";
import { json } from "../_shared/http/responses.ts";
import type { AccountDeletedAnswer } from "./creator-control-answers.ts";
import { deleteAccount } from "./creator-controls-store.ts";
import {
  freshSignatureRequest,
  readSignedAction,
  type SignedActionDeps,
} from "./fresh-signature.ts";

export function deleteAccountRoute(deps: SignedActionDeps): SessionRoute {
  return async function removeAccount(request, session) {
    const { action } = await readSignedAction(
      deps,
      request,
      session,
      "delete_account",
      freshSignatureRequest,
    );
    await deleteAccount(deps.db, action);
    return json({ deleted: true } satisfies AccountDeletedAnswer);
  };
}
