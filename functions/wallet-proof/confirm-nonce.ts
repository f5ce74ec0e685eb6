/**
 * POST /wallet-proof/confirm/nonce: a nonce for one sensitive act (fresh-signature.ts), for the
 * signed-in creator, with the whole message to sign. The nonce is bound to the purpose, to the
 * session that asked, and to the creator's address and chain (a contract wallet's own), so only
 * that creator's signature, sent by that session, for that act, can spend it. A sign-out's message
 * also lists the sessions it ends (its resources), which the signature then covers.
 */
import { z } from "zod";
import type { AppConfig } from "../_shared/config/app-config.ts";
import { budget } from "../_shared/config/limits.ts";
import type { Database } from "../_shared/db/db.ts";
import { clientIp } from "../_shared/auth/rate-limit.ts";
import type { SessionRoute } from "../_shared/auth/session-checks.ts";
import { generateNonce } from "../_shared/auth/siwe.ts";
import { readJson } from "../_shared/http/bodies.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import { acceptsLoopbackOrigins, signInOriginsFor } from "../_shared/http/local-origins.ts";
import { parseRequest } from "../_shared/http/request-issues.ts";
import { json } from "../_shared/http/responses.ts";
import type { ConfirmNonceAnswer } from "./creator-control-answers.ts";
import { issueConfirmationNonce } from "./creator-controls-store.ts";
import { CONFIRM_PURPOSES, confirmStatements } from "./fresh-signature.ts";
import { nonceMessage, requireAllowedChain, requireOrigins } from "./message-to-sign.ts";
import { sessionIdsField, sessionResources } from "./sign-out-sessions.ts";

export const confirmNonceRequest = z.strictObject({
  purpose: z.enum(CONFIRM_PURPOSES),
  /** A key's creator may name the chain its wallet is on; a contract wallet signs on its own. */
  chainId: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
  /** For sign_out_sessions, and only for it: the sessions the message names and ends. */
  sessionIds: sessionIdsField.optional(),
});

export interface ConfirmNonceDeps {
  readonly db: Database;
  readonly config: Pick<
    AppConfig,
    | "appEnv"
    | "projectName"
    | "clientIp"
    | "rateLimits"
    | "allowedChainIds"
    | "nonceTtlSeconds"
  >;
  readonly signInOrigins: readonly string[];
}

export function confirmNonceRoute({ db, config, signInOrigins }: ConfirmNonceDeps): SessionRoute {
  const statements = confirmStatements(config.projectName);
  const acceptLoopback = acceptsLoopbackOrigins(config.appEnv);

  return async function confirmationNonce(request, session) {
    const origins = requireOrigins(signInOriginsFor(signInOrigins, request, acceptLoopback));
    const body = parseRequest(confirmNonceRequest, await readJson(request));
    const allowedChains = config.allowedChainIds;
    requireAllowedChain(body.chainId, allowedChains);
    const signsOut = body.purpose === "sign_out_sessions";
    if (signsOut !== (body.sessionIds !== undefined)) {
      throw new ServiceError(
        "invalid_request",
        signsOut
          ? "sessionIds: name the sessions to sign out; the message will list them."
          : "sessionIds: only for sign_out_sessions.",
      );
    }
    const nonce = generateNonce();
    const row = await issueConfirmationNonce(db, session, {
      purpose: body.purpose,
      nonce,
      ttlSeconds: config.nonceTtlSeconds,
      chainId: body.chainId ?? allowedChains?.[0] ?? 1,
      client: budget(
        config.rateLimits,
        "noncePerIpPerMinute",
        "client",
        clientIp(request, config.clientIp),
      ),
    });
    const message = nonceMessage(request, origins, {
      chainId: Number(row.chain_id),
      nonce,
      issuedAt: row.issued_at,
      expiresAt: row.expires_at,
      statement: statements[body.purpose],
      ...(body.sessionIds === undefined ? {} : { resources: sessionResources(body.sessionIds) }),
    });
    return json(
      {
        purpose: body.purpose,
        ...message.fields,
        message: message.forAddress(row.wallet_address),
      } satisfies ConfirmNonceAnswer,
    );
  };
}
