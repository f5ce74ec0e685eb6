/**
 * POST /wallet-proof/sessions/sign-out: ends the named sessions of the creator, any of them (this
 * one included), with a fresh signature for `sign_out_sessions`. Every id must be one of this
 * creator's sessions, else 404 session_not_found and nothing ends: another creator's session is
 * out of reach, and is answered as an unknown id is.
 */
import { z } from "zod";
import type { AppConfig } from "../_shared/config/config.ts";
import type { Database } from "../_shared/db/db.ts";
import type { SessionTokens } from "../_shared/auth/session-tokens.ts";
import { MAX_PROOF_BODY_BYTES, readJson, requireSessionToken } from "../_shared/http/bodies.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import { parseRequest } from "../_shared/http/request-issues.ts";
import { json } from "../_shared/http/responses.ts";
import type { Handler } from "../_shared/http/router.ts";
import type { SignOutAnswer } from "./creator-answers.ts";
import {
  confirmationRefusal,
  type FreshSignatureCheck,
  freshSignatureFields,
  spendParams,
} from "./fresh-signature.ts";

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

export interface SignOutSessionsDeps {
  readonly db: Database;
  readonly sessions: SessionTokens;
  readonly config: Pick<AppConfig, "publicApiKeys" | "rateLimits">;
  readonly checkFreshSignature: FreshSignatureCheck;
}

export function signOutSessionsRoute(deps: SignOutSessionsDeps): Handler {
  const { db, sessions, config, checkFreshSignature } = deps;
  return async function signOutSessions(request) {
    const session = await sessions.verifyToken(requireSessionToken(request, config.publicApiKeys));
    const body = parseRequest(
      signOutSessionsRequest,
      await readJson(request, MAX_PROOF_BODY_BYTES),
    );
    const signer = await checkFreshSignature(request, session, "sign_out_sessions", body);
    const { head, tail } = spendParams(session, signer, config);
    const [row] = await db.query<
      { outcome: string; signed_out: number | null; retry_after: number | null }
    >(
      `select outcome, signed_out, retry_after
         from public.sign_out_sessions($1, $2, $3, $4, $5, $6, $7::uuid[], $8, $9)`,
      [...head, body.sessionIds.map((id) => id.toLowerCase()), ...tail],
    );
    if (row.outcome === "signed_out") {
      return json({ signedOut: row.signed_out ?? 0 } satisfies SignOutAnswer);
    }
    if (row.outcome === "session_not_found") {
      throw new ServiceError(
        "session_not_found",
        "Not every id names a session of this creator; nothing was signed out.",
      );
    }
    throw confirmationRefusal(row.outcome, row.retry_after);
  };
}
