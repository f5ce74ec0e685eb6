/**
 * POST /wallet-proof/unlock: lets live runs reveal the creator's keys again after a lock, with a
 * fresh signature for `unlock`: a session alone can lock (user-secrets' POST /lock), and never
 * unlock, so a stolen session cannot undo the creator's lock.
 */
import type { AppConfig } from "../_shared/config/config.ts";
import type { Database } from "../_shared/db/db.ts";
import type { SessionTokens } from "../_shared/auth/session-tokens.ts";
import { MAX_PROOF_BODY_BYTES, readJson, requireSessionToken } from "../_shared/http/bodies.ts";
import { parseRequest } from "../_shared/http/request-issues.ts";
import { json } from "../_shared/http/responses.ts";
import type { Handler } from "../_shared/http/router.ts";
import type { UnlockAnswer } from "./creator-answers.ts";
import {
  confirmationRefusal,
  type FreshSignatureCheck,
  freshSignatureRequest,
  spendParams,
} from "./fresh-signature.ts";

export interface UnlockDeps {
  readonly db: Database;
  readonly sessions: SessionTokens;
  readonly config: Pick<AppConfig, "publicApiKeys" | "rateLimits">;
  readonly checkFreshSignature: FreshSignatureCheck;
}

export function unlockRoute({ db, sessions, config, checkFreshSignature }: UnlockDeps): Handler {
  return async function unlock(request) {
    const session = await sessions.verifyToken(requireSessionToken(request, config.publicApiKeys));
    const body = parseRequest(
      freshSignatureRequest,
      await readJson(request, MAX_PROOF_BODY_BYTES),
    );
    const signer = await checkFreshSignature(request, session, "unlock", body);
    const { head, tail } = spendParams(session, signer, config);
    const [row] = await db.query<{ outcome: string; retry_after: number | null }>(
      "select outcome, retry_after from public.unlock_reveals($1, $2, $3, $4, $5, $6, $7, $8)",
      [...head, ...tail],
    );
    if (row.outcome !== "unlocked") throw confirmationRefusal(row.outcome, row.retry_after);
    return json({ locked: false } satisfies UnlockAnswer);
  };
}
