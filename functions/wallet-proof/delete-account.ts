/**
 * DELETE /wallet-proof/account: deletes the creator, with a fresh signature for `delete_account`.
 * Its secrets, sessions, rate-limit windows and wallet mapping go in one transaction with the
 * nonce's spending; nonce-use records and the audit trail stay, unlinked (public.delete_account
 * says how). A later sign-in with the same wallet is a new creator with an empty vault.
 */
import type { AppConfig } from "../_shared/config/config.ts";
import type { Database } from "../_shared/db/db.ts";
import type { SessionTokens } from "../_shared/auth/session-tokens.ts";
import { MAX_PROOF_BODY_BYTES, readJson, requireSessionToken } from "../_shared/http/bodies.ts";
import { parseRequest } from "../_shared/http/request-issues.ts";
import { json } from "../_shared/http/responses.ts";
import type { Handler } from "../_shared/http/router.ts";
import type { AccountDeletedAnswer } from "./creator-answers.ts";
import {
  confirmationRefusal,
  type FreshSignatureCheck,
  freshSignatureRequest,
  spendParams,
} from "./fresh-signature.ts";

export interface DeleteAccountDeps {
  readonly db: Database;
  readonly sessions: SessionTokens;
  readonly config: Pick<AppConfig, "publicApiKeys" | "rateLimits">;
  readonly checkFreshSignature: FreshSignatureCheck;
}

export function deleteAccountRoute(deps: DeleteAccountDeps): Handler {
  const { db, sessions, config, checkFreshSignature } = deps;
  return async function deleteAccount(request) {
    const session = await sessions.verifyToken(requireSessionToken(request, config.publicApiKeys));
    const body = parseRequest(
      freshSignatureRequest,
      await readJson(request, MAX_PROOF_BODY_BYTES),
    );
    const signer = await checkFreshSignature(request, session, "delete_account", body);
    const { head, tail } = spendParams(session, signer, config);
    const [row] = await db.query<{ outcome: string; retry_after: number | null }>(
      "select outcome, retry_after from public.delete_account($1, $2, $3, $4, $5, $6, $7, $8)",
      [...head, ...tail],
    );
    if (row.outcome !== "deleted") throw confirmationRefusal(row.outcome, row.retry_after);
    return json({ deleted: true } satisfies AccountDeletedAnswer);
  };
}
