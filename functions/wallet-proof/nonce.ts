/** POST /wallet-proof/nonce: a server nonce, bound to the address and chain asked for. */
import { z } from "zod";
import type { AppConfig } from "../_shared/config/app-config.ts";
import { budget } from "../_shared/config/limits.ts";
import type { Database } from "../_shared/db/db.ts";
import { clientIp, rateLimited } from "../_shared/auth/rate-limit.ts";
import { generateNonce, toStatement } from "../_shared/auth/siwe.ts";
import { readOptionalJson } from "../_shared/http/bodies.ts";
import { acceptsLoopbackOrigins, signInOriginsFor } from "../_shared/http/local-origins.ts";
import { parseRequest } from "../_shared/http/request-issues.ts";
import { json } from "../_shared/http/responses.ts";
import type { Handler } from "../_shared/http/router.ts";
import type { NonceAnswer } from "./answers.ts";
import { issueNonce } from "./sign-in-store.ts";
import { nonceMessage, requireAllowedChain, requireOrigins } from "./message-to-sign.ts";

export const nonceRequest = z.strictObject({
  address: z.string().regex(/^0x[0-9a-fA-F]{40}$/, "must be a 0x-prefixed 20-byte hex address")
    .optional(),
  chainId: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
});

export interface NonceDeps {
  readonly db: Database;
  readonly config: Pick<
    AppConfig,
    "appEnv" | "projectName" | "clientIp" | "rateLimits" | "allowedChainIds" | "nonceTtlSeconds"
  >;
  readonly signInOrigins: readonly string[];
}

export function nonceRoute({ db, config, signInOrigins }: NonceDeps): Handler {
  // Only characters EIP-4361 allows in a statement: a project name with others would otherwise
  // make every message this server hands out one that its own parser (and wallets) refuse.
  const statement = toStatement(
    `Sign in to ${config.projectName}. This signature proves you own this wallet; ` +
      "it authorizes no transaction and costs no gas.",
  );

  const acceptLoopback = acceptsLoopbackOrigins(config.appEnv);

  return async function newNonce(request) {
    const origins = requireOrigins(signInOriginsFor(signInOrigins, request, acceptLoopback));
    const body = parseRequest(nonceRequest, await readOptionalJson(request));
    const allowedChains = config.allowedChainIds;
    requireAllowedChain(body.chainId, allowedChains);
    const nonce = generateNonce();
    // One call: the client's rate-limit hit, then (within the limit) the nonce, bound to the
    // address and chain asked for so that only a proof for them can spend it.
    const row = await issueNonce(db, {
      nonce,
      ttlSeconds: config.nonceTtlSeconds,
      address: body.address?.toLowerCase() ?? null,
      chainId: body.chainId ?? null,
      client: budget(
        config.rateLimits,
        "noncePerIpPerMinute",
        "client",
        clientIp(request, config.clientIp),
      ),
    });
    if (row.outcome === "rate_limited") throw rateLimited(row.retry_after);
    const message = nonceMessage(request, origins, {
      chainId: body.chainId ?? allowedChains?.[0] ?? 1,
      nonce,
      issuedAt: row.issued_at,
      expiresAt: row.expires_at,
      statement,
    });
    const answer: NonceAnswer = {
      ...message.fields,
      ...(body.address === undefined ? {} : { message: message.forAddress(body.address) }),
    };
    return json(answer);
  };
}
