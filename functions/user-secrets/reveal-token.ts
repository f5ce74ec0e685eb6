/**
 * The server reveal token check: the second credential plaintext retrieval needs, next to the
 * creator's session. Only the service's own server holds it, and a page on another origin cannot
 * even send the header (CORS never allows it); a page never holds the token to send.
 */
import { sha256 } from "@noble/hashes/sha2";
import type { AppConfig } from "../_shared/config/app-config.ts";
import type { Database } from "../_shared/db/db.ts";
import { clientIp, rateLimited } from "../_shared/auth/rate-limit.ts";
import type { TokenIdentity } from "../_shared/auth/session-tokens.ts";
import { toHex } from "../_shared/bytes.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import type { Logger } from "../_shared/http/log.ts";
import { REVEAL_TOKEN_HEADER } from "../_shared/http/reveal-header.ts";
import type { Handler } from "../_shared/http/router.ts";
import { createOverBudgetClients } from "./over-budget-clients.ts";
import { refuseReveal, type RevealRefusal } from "./vault-store.ts";

// Synchronous: WebCrypto's digest is asynchronous, which costs more than hashing a token of a few
// dozen bytes.
const digest = (value: string): Uint8Array => sha256(new TextEncoder().encode(value));

/** What a request's reveal token is: the configured one, none at all, or another. */
type PresentedToken = "right" | "missing" | "wrong";

export interface RevealTokenDeps {
  readonly db: Database;
  readonly log: Logger;
  readonly config: Pick<AppConfig, "clientIp" | "rateLimits" | "serverRevealToken">;
  /** Whose session a refused request carried, if any (session-checks.ts). */
  readonly identityIfValid: (request: Request) => Promise<TokenIdentity | null>;
}

/**
 * `requireRevealToken(route)`: the route, for a request with the configured reveal token. Without
 * it nothing else is looked at, but to count and record the refusal; the right token costs
 * nothing more than the comparison. A missing or wrong one is counted against the client
 * address's budget (403 within it, then 429), logged, and with a live session recorded in its
 * creator's trail. Only this path counts, so a server holding the right token is never refused by
 * this limit, whatever shares its address. Neither the log nor the trail holds anything of the
 * token.
 */
export function revealTokenCheck(
  { db, log, config, identityIfValid }: RevealTokenDeps,
): (route: Handler) => Handler {
  const checkRevealToken = createRevealTokenCheck(config.serverRevealToken);
  const refusalsPerMinute = config.rateLimits.wrongRevealTokensPerIpPerMinute;
  const overBudget = createOverBudgetClients();

  async function refuse(request: Request, presented: PresentedToken): Promise<never> {
    const client = clientIp(request, config.clientIp);
    const known = overBudget.retryAfter(client);
    for (const { client: over, refusals } of overBudget.ended()) {
      // One line per client and window for the refusals past its first one over the budget.
      log.info("reveal_refusals_over_budget", { client: over, refusals });
    }
    // Already over in this window: refused without the database, logged in that line.
    if (known !== null) throw rateLimited(known);
    const session = await identityIfValid(request);
    const fields = { client, reason: presented, user_id: session?.userId ?? null };
    let refusal: RevealRefusal;
    try {
      refusal = await refuseReveal(db, wrongTokenBucket(client), session, refusalsPerMinute);
    } catch (error) {
      // The token is wrong whatever the database says; the operator sees the failure here.
      log.error("reveal_refusal_not_counted", {
        ...fields,
        error: error instanceof Error ? error.name : "unknown",
      });
      throw revealForbidden();
    }
    const limited = refusal.hits > refusalsPerMinute;
    log.info("reveal_refused", { ...fields, limited, recorded: refusal.recorded });
    if (!limited) throw revealForbidden();
    overBudget.add(client, refusal.retryAfter);
    throw rateLimited(refusal.retryAfter);
  }

  return (route) => async (request) => {
    const presented = checkRevealToken(request);
    if (presented !== "right") return await refuse(request, presented);
    return route(request);
  };
}

/**
 * Returns a check of the request's reveal token against the configured one. Both sides are hashed
 * first and the digests compared without an early exit, so neither the token's content nor its
 * length shows in the response time.
 */
function createRevealTokenCheck(
  configuredToken: string,
): (request: Request) => PresentedToken {
  const wanted = digest(configuredToken);
  return (request) => {
    const presented = request.headers.get(REVEAL_TOKEN_HEADER);
    const actual = digest(presented ?? "");
    let difference = presented === null || configuredToken.length === 0 ? 1 : 0;
    for (let i = 0; i < wanted.length; i++) difference |= wanted[i] ^ actual[i];
    if (difference === 0) return "right";
    return presented === null ? "missing" : "wrong";
  };
}

/** The answer to a missing or wrong reveal token, within the client's budget. */
function revealForbidden(): ServiceError {
  return new ServiceError(
    "reveal_forbidden",
    `Revealing secrets needs the server's ${REVEAL_TOKEN_HEADER} header.`,
  );
}

/** The rate-limit bucket of a client address's wrong reveal tokens. */
const wrongTokenBucket = (client: string): string => `vault:reveal:wrong-token:ip:${client}`;

/**
 * The name of the token's reveal rate-limit bucket: 16 hex digits of a labelled SHA-256 of the
 * token, so the counter table names the token without holding it (and a new token starts afresh).
 */
export function revealTokenBucket(configuredToken: string): string {
  const hash = digest(`wallet-vault/reveal-rate-limit/v1:${configuredToken}`);
  return toHex(hash.subarray(0, 8));
}
