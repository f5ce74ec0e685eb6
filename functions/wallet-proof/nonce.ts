/** POST /wallet-proof/nonce: a server nonce, bound to the address and chain asked for. */
import { z } from "zod";
import type { AppConfig } from "../_shared/config/config.ts";
import {
  type Database,
  queryWithoutWaitingForFlush,
  type Statement,
  withoutWaitingForFlush,
} from "../_shared/db/db.ts";
import { checksumAddress } from "../_shared/auth/eth.ts";
import { clientIp, RATE_LIMIT_WINDOW_SECONDS, rateLimited } from "../_shared/auth/rate-limit.ts";
import { buildSiweMessage, generateNonce, toStatement } from "../_shared/auth/siwe.ts";
import { readOptionalJson } from "../_shared/http/bodies.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import { acceptsLoopbackOrigins, signInOriginsFor } from "../_shared/http/local-origins.ts";
import { parseRequest } from "../_shared/http/request-issues.ts";
import { json } from "../_shared/http/responses.ts";
import type { Handler } from "../_shared/http/router.ts";
import type { NonceAnswer } from "./answers.ts";
import { requireOrigins } from "./session-answer.ts";

export const nonceRequest = z.strictObject({
  address: z.string().regex(/^0x[0-9a-fA-F]{40}$/, "must be a 0x-prefixed 20-byte hex address")
    .optional(),
  chainId: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
});

/*
 * Issuing a nonce does not wait for the WAL flush (WITHOUT_WAITING_FOR_FLUSH, for its own
 * transaction only). A nonce is short-lived and cheap to replace: a database crash can forget those
 * issued in its last moments, whose sign-ins then fail as nonce_unknown and start over with a new
 * one. Replay protection is unchanged: spending a nonce commits synchronously, and that flush
 * covers the nonce's own insert, written before it. And this route needs no session.
 */

/** The nonce's one call: the client's rate-limit hit, then (within the limit) the nonce. */
const ISSUE_NONCE = `select outcome, issued_at, expires_at, retry_after
                              from public.issue_nonce($1, $2, $3, $4, $5, $6, $7)`;

/** What public.issue_nonce is given: the nonce, what it is bound to, and the client's limit. */
export interface NonceIssue {
  readonly nonce: string;
  readonly ttlSeconds: number;
  /** Lower-case 0x address, or null for any. */
  readonly address: string | null;
  readonly chainId: number | null;
  readonly bucket: string;
  readonly maxHits: number;
  readonly windowSeconds: number;
}

/** The nonce's one call. */
function issueNonceStatement(issue: NonceIssue): Statement {
  return {
    text: ISSUE_NONCE,
    params: [
      issue.nonce,
      issue.ttlSeconds,
      issue.address,
      issue.chainId,
      issue.bucket,
      issue.maxHits,
      issue.windowSeconds,
    ],
  };
}

/** The nonce's transaction: the flush setting, then the one call (bench:profile times the same). */
export function issueNonceBatch(issue: NonceIssue): [Statement, Statement] {
  return withoutWaitingForFlush(issueNonceStatement(issue));
}

type IssuedNonce = {
  outcome: "issued" | "rate_limited";
  issued_at: Date;
  expires_at: Date;
  retry_after: number;
};

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

  return async function issueNonce(request) {
    const origins = requireOrigins(signInOriginsFor(signInOrigins, request, acceptLoopback));
    const body = parseRequest(nonceRequest, await readOptionalJson(request));
    const allowedChains = config.allowedChainIds;
    if (
      body.chainId !== undefined && allowedChains !== null && !allowedChains.includes(body.chainId)
    ) {
      throw new ServiceError("chain_not_allowed", "Sign-in from this chain is not accepted.", {
        allowedChainIds: allowedChains,
      });
    }
    // The origin the page runs on, when it is one we accept; the caller cannot widen the list
    // (outside production, a loopback page's own origin is accepted: local-origins.ts).
    const requestOrigin = request.headers.get("origin");
    const origin = origins.find((o) => o === requestOrigin) ?? origins[0];
    const nonce = generateNonce();
    // One call: the client's rate-limit hit, then (within the limit) the nonce, bound to the
    // address and chain asked for so that only a proof for them can spend it.
    const [row] = await queryWithoutWaitingForFlush<IssuedNonce>(
      db,
      issueNonceStatement({
        nonce,
        ttlSeconds: config.nonceTtlSeconds,
        address: body.address?.toLowerCase() ?? null,
        chainId: body.chainId ?? null,
        bucket: `nonce:ip:${clientIp(request, config.clientIp)}`,
        maxHits: config.rateLimits.noncePerIpPerMinute,
        windowSeconds: RATE_LIMIT_WINDOW_SECONDS,
      }),
    );
    if (row.outcome === "rate_limited") throw rateLimited(row.retry_after);
    const fields = {
      domain: new URL(origin).host,
      uri: origin,
      chainId: body.chainId ?? allowedChains?.[0] ?? 1,
      nonce,
      issuedAt: row.issued_at,
      expirationTime: row.expires_at,
      statement,
    };
    const answer: NonceAnswer = {
      nonce,
      issuedAt: row.issued_at.toISOString(),
      expiresAt: row.expires_at.toISOString(),
      domain: fields.domain,
      uri: fields.uri,
      chainId: fields.chainId,
      version: "1",
      statement,
      ...(body.address === undefined ? {} : {
        message: buildSiweMessage({ ...fields, address: checksumAddress(body.address) }),
      }),
    };
    return json(answer);
  };
}
