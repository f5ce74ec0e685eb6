/**
 * POST /wallet-proof: the EIP-4361 message and its EIP-191 signature (or a contract wallet's,
 * contract-proof.ts) exchanged for a session.
 */
import { z } from "zod";
import type { AppConfig } from "../_shared/config/app-config.ts";
import { budget, prefixBudget } from "../_shared/config/limits.ts";
import type { Database } from "../_shared/db/db.ts";
import { clientIp, enforceRateLimit, rateLimited } from "../_shared/auth/rate-limit.ts";
import { hashRefreshToken, newRefreshToken } from "../_shared/auth/refresh-tokens.ts";
import type { SessionSigner } from "../_shared/auth/session-signer.ts";
import { checkSiweMessage, type SiweFields, verifySignature } from "../_shared/auth/siwe.ts";
import { MAX_MESSAGE_LENGTH } from "../_shared/auth/siwe-parser.ts";
import { MAX_CONTRACT_SIGNATURE_BYTES } from "../_shared/chain/contract-signatures.ts";
import { MAX_PROOF_BODY_BYTES, readJson } from "../_shared/http/bodies.ts";
import { clientDescription } from "../_shared/http/client-description.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import { acceptsLoopbackOrigins, signInOriginsFor } from "../_shared/http/local-origins.ts";
import { parseRequest } from "../_shared/http/request-issues.ts";
import type { Handler } from "../_shared/http/router.ts";
import { type ContractProofCheck, nonceRefusal } from "./contract-proof.ts";
import { signIn } from "./sign-in-store.ts";
import { requireOrigins } from "./message-to-sign.ts";
import { sessionAnswer } from "./session-answer.ts";

const CLOCK_SKEW_MS = 60_000;

export const proofRequest = z.strictObject({
  message: z.string().min(1).max(MAX_MESSAGE_LENGTH),
  // 65 bytes from a key; contract wallets' signatures (multisig, passkey, ERC-6492) run longer.
  signature: z.string().max(2 + 2 * MAX_CONTRACT_SIGNATURE_BYTES),
});

export interface ProofDeps {
  readonly db: Database;
  readonly signer: SessionSigner;
  readonly config: Pick<
    AppConfig,
    | "appEnv"
    | "clientIp"
    | "rateLimits"
    | "allowedChainIds"
    | "refreshTokenTtlSeconds"
    | "accessTokenTtlSeconds"
  >;
  readonly signInOrigins: readonly string[];
  readonly checkContractProof: ContractProofCheck;
}

export function proofRoute(deps: ProofDeps): Handler {
  const { db, config, signInOrigins, checkContractProof } = deps;
  const acceptLoopback = acceptsLoopbackOrigins(config.appEnv);

  return async function exchangeProof(request) {
    // A loopback page's message is accepted from that page alone: its Origin must name it.
    const origins = requireOrigins(signInOriginsFor(signInOrigins, request, acceptLoopback));
    const body = parseRequest(proofRequest, await readJson(request, MAX_PROOF_BODY_BYTES));
    // Every attempt counts against the client's budget, and over it a 429 wins over whatever the
    // checks find. A proof that passes them is counted inside the sign-in's own transaction (one
    // commit); one that fails them, or needs a contract's RPC call, is counted on its own first.
    const ipLimit = budget(
      config.rateLimits,
      "proofPerIpPerMinute",
      "client",
      clientIp(request, config.clientIp),
    );
    let fields: SiweFields;
    let byKey = true;
    try {
      fields = checkSiweMessage(body.message, {
        origins,
        chainIds: config.allowedChainIds,
        now: new Date(),
        clockSkewMs: CLOCK_SKEW_MS,
      });
      try {
        verifySignature(body.message, body.signature, fields.address);
      } catch (error) {
        if (!(error instanceof ServiceError)) throw error;
        byKey = false; // not the address's key: perhaps its contract wallet (ERC-1271/6492)
      }
    } catch (error) {
      await enforceRateLimit(db, ipLimit);
      throw error;
    }
    if (!byKey) {
      await enforceRateLimit(db, ipLimit);
      await checkContractProof(request, fields, body.message, body.signature);
    }

    // The rest is one database call (sign-in-store.ts's signIn).
    const walletAddress = fields.address.toLowerCase();
    const refreshToken = newRefreshToken();
    const result = await signIn(db, {
      client: { ...ipLimit, counted: !byKey },
      nonce: fields.nonce,
      walletAddress,
      refreshTokenHash: hashRefreshToken(refreshToken),
      refreshTokenTtlSeconds: config.refreshTokenTtlSeconds,
      wallet: prefixBudget(config.rateLimits, "proofPerAddressPerMinute", "wallet"),
      messageChainId: fields.chainId,
      identityChainId: byKey ? null : fields.chainId,
      clientDescription: clientDescription(request),
    });
    if (result.outcome === "signed_in") {
      return sessionAnswer(deps, {
        userId: result.user_id,
        sessionId: result.session_id,
        walletAddress,
      }, refreshToken);
    }
    if (result.outcome === "rate_limited") throw rateLimited(result.retry_after);
    throw nonceRefusal(result.outcome);
  };
}
