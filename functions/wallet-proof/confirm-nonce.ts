/**
 * POST /wallet-proof/confirm/nonce: a nonce for one sensitive act (fresh-signature.ts), for the
 * signed-in creator, with the whole message to sign. The nonce is bound to the purpose, to the
 * session that asked, and to the creator's address and chain (a contract wallet's own), so only
 * that creator's signature, sent by that session, for that act, can spend it.
 */
import { z } from "zod";
import type { AppConfig } from "../_shared/config/config.ts";
import { type Database, queryWithoutWaitingForFlush } from "../_shared/db/db.ts";
import { checksumAddress } from "../_shared/auth/eth.ts";
import { clientIp, RATE_LIMIT_WINDOW_SECONDS, rateLimited } from "../_shared/auth/rate-limit.ts";
import { sessionEnded, type SessionTokens } from "../_shared/auth/session-tokens.ts";
import { buildSiweMessage, generateNonce } from "../_shared/auth/siwe.ts";
import { readJson, requireSessionToken } from "../_shared/http/bodies.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import { acceptsLoopbackOrigins, signInOriginsFor } from "../_shared/http/local-origins.ts";
import { parseRequest } from "../_shared/http/request-issues.ts";
import { json } from "../_shared/http/responses.ts";
import type { Handler } from "../_shared/http/router.ts";
import type { ConfirmNonceAnswer } from "./creator-answers.ts";
import { CONFIRM_PURPOSES, confirmStatements } from "./fresh-signature.ts";
import { requireOrigins } from "./session-answer.ts";

export const confirmNonceRequest = z.strictObject({
  purpose: z.enum(CONFIRM_PURPOSES),
  /** A key's creator may name the chain its wallet is on; a contract wallet signs on its own. */
  chainId: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
});

type IssuedConfirmation = {
  outcome: "issued" | "session_revoked" | "rate_limited";
  wallet_address: string;
  chain_id: string;
  issued_at: Date;
  expires_at: Date;
  retry_after: number | null;
};

export interface ConfirmNonceDeps {
  readonly db: Database;
  readonly sessions: SessionTokens;
  readonly config: Pick<
    AppConfig,
    | "appEnv"
    | "projectName"
    | "clientIp"
    | "rateLimits"
    | "allowedChainIds"
    | "nonceTtlSeconds"
    | "publicApiKeys"
  >;
  readonly signInOrigins: readonly string[];
}

export function confirmNonceRoute(
  { db, sessions, config, signInOrigins }: ConfirmNonceDeps,
): Handler {
  const statements = confirmStatements(config.projectName);
  const acceptLoopback = acceptsLoopbackOrigins(config.appEnv);

  return async function issueConfirmationNonce(request) {
    const origins = requireOrigins(signInOriginsFor(signInOrigins, request, acceptLoopback));
    const session = await sessions.verifyToken(requireSessionToken(request, config.publicApiKeys));
    const body = parseRequest(confirmNonceRequest, await readJson(request));
    const allowedChains = config.allowedChainIds;
    if (
      body.chainId !== undefined && allowedChains !== null && !allowedChains.includes(body.chainId)
    ) {
      throw new ServiceError("chain_not_allowed", "Sign-in from this chain is not accepted.", {
        allowedChainIds: allowedChains,
      });
    }
    const requestOrigin = request.headers.get("origin");
    const origin = origins.find((o) => o === requestOrigin) ?? origins[0];
    const nonce = generateNonce();
    // Like a sign-in nonce: counted against the client's nonce budget, and not worth a flush.
    const [row] = await queryWithoutWaitingForFlush<IssuedConfirmation>(db, {
      text: `select outcome, wallet_address, chain_id::text as chain_id, issued_at, expires_at,
                    retry_after
               from public.issue_confirmation_nonce($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      params: [
        session.sessionId,
        session.userId,
        body.purpose,
        nonce,
        config.nonceTtlSeconds,
        body.chainId ?? allowedChains?.[0] ?? 1,
        `nonce:ip:${clientIp(request, config.clientIp)}`,
        config.rateLimits.noncePerIpPerMinute,
        RATE_LIMIT_WINDOW_SECONDS,
      ],
    });
    if (row.outcome === "session_revoked") throw sessionEnded();
    if (row.outcome === "rate_limited") throw rateLimited(row.retry_after ?? 1);
    const fields = {
      domain: new URL(origin).host,
      uri: origin,
      chainId: Number(row.chain_id),
      nonce,
      issuedAt: row.issued_at,
      expirationTime: row.expires_at,
      statement: statements[body.purpose],
    };
    return json(
      {
        purpose: body.purpose,
        nonce,
        issuedAt: row.issued_at.toISOString(),
        expiresAt: row.expires_at.toISOString(),
        domain: fields.domain,
        uri: fields.uri,
        chainId: fields.chainId,
        version: "1",
        statement: fields.statement,
        message: buildSiweMessage({ ...fields, address: checksumAddress(row.wallet_address) }),
      } satisfies ConfirmNonceAnswer,
    );
  };
}
