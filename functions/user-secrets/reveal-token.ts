/**
 * The live-run credential check: the second credential plaintext retrieval needs, next to the
 * creator's session. Only a live-run service's own server holds one, and a page on another origin
 * cannot even send the header (CORS never allows it); a page never holds one to send. A credential
 * in the header is recognised by its format (live-run-credential-format.ts) and looked up by hash
 * in the reveal's own statement (vault-store.ts); the deprecated SERVER_REVEAL_TOKEN, while it is
 * configured, is compared here and reveals every type, naming no credential in the trail (the
 * logs call it `legacy`).
 */
import { sha256 } from "@noble/hashes/sha2";
import type { AppConfig } from "../_shared/config/app-config.ts";
import { budget, prefixBudget } from "../_shared/config/limits.ts";
import type { Database } from "../_shared/db/db.ts";
import { clientIp, rateLimited } from "../_shared/auth/rate-limit.ts";
import { isLiveRunCredential } from "../_shared/auth/live-run-credential-format.ts";
import {
  liveRunCredentialBucket,
  liveRunCredentialHash,
} from "../_shared/auth/live-run-credential-hash.ts";
import type { TokenIdentity } from "../_shared/auth/session-tokens.ts";
import { toHex } from "../_shared/bytes.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import type { Logger } from "../_shared/http/log.ts";
import { REVEAL_TOKEN_HEADER } from "../../protocol/reveal-header.ts";
import type { Handler } from "../_shared/http/router.ts";
import { createOverBudgetClients } from "./over-budget-clients.ts";
import { refuseReveal, type RevealRefusal } from "./vault-store.ts";

// Synchronous: WebCrypto's digest is asynchronous, which costs more than hashing a token of a few
// dozen bytes.
const digest = (value: string): Uint8Array => sha256(new TextEncoder().encode(value));

/** What a request's header is: the legacy token, a credential to look up, none, or another. */
type PresentedToken = "legacy" | "credential" | "missing" | "wrong";

/** The credential a request presented, as the reveal's statement takes it. */
export interface PresentedCredential {
  /** The SHA-256 the credential is stored under; null for the legacy SERVER_REVEAL_TOKEN. */
  readonly hash: Uint8Array | null;
  /** Its reveal rate-limit bucket. */
  readonly bucket: string;
}

// Set by the check, read by the reveal route: the header is parsed and hashed once per request.
const presentedCredentials = new WeakMap<Request, PresentedCredential>();

/** The credential `request` passed the check with (requireRevealToken ran first). */
export function presentedCredential(request: Request): PresentedCredential {
  const presented = presentedCredentials.get(request);
  if (presented === undefined) throw new Error("the reveal route runs behind requireRevealToken");
  return presented;
}

export interface RevealTokenDeps {
  readonly db: Database;
  readonly log: Logger;
  readonly config: Pick<AppConfig, "clientIp" | "rateLimits" | "serverRevealToken">;
  /** Whose session a refused request carried, if any (session-checks.ts). */
  readonly identityIfValid: (request: Request) => Promise<TokenIdentity | null>;
}

export interface RevealTokenCheck {
  /** The route, for a request presenting the legacy token or a well-formed credential. */
  readonly requireRevealToken: (route: Handler) => Handler;
  /** Refuses `request`'s credential (the reveal found it unknown, revoked or expired). */
  readonly refuseCredential: (request: Request) => Promise<never>;
}

/**
 * `requireRevealToken(route)`: the route, for a request with the configured legacy token or a
 * well-formed credential (the reveal's statement then decides whether it is live). Anything else
 * is refused before any database work but counting and recording the refusal; a right one costs
 * nothing more than the comparison and a hash. A missing, malformed, unknown, revoked or expired
 * one is counted against the client address's budget (403 within it, then 429), logged, and with
 * a live session recorded in its creator's trail. Only this path counts, so a server holding a
 * live credential is never refused by this limit, whatever shares its address. Neither the log nor
 * the trail holds anything of the credential.
 */
export function revealTokenCheck(
  { db, log, config, identityIfValid }: RevealTokenDeps,
): RevealTokenCheck {
  const checkRevealToken = createRevealTokenCheck(config.serverRevealToken);
  const legacyBucket = revealTokenBucket(config.serverRevealToken);
  const creatorRefusals = prefixBudget(
    config.rateLimits,
    "wrongRevealTokensPerIpPerMinute",
    "creator",
  );
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
    const clientRefusals = budget(
      config.rateLimits,
      "wrongRevealTokensPerIpPerMinute",
      "client",
      client,
    );
    const fields = { client, reason: presented, user_id: session?.userId ?? null };
    let refusal: RevealRefusal;
    try {
      refusal = await refuseReveal(db, clientRefusals, creatorRefusals, session);
    } catch (error) {
      // The token is wrong whatever the database says; the operator sees the failure here.
      log.error("reveal_refusal_not_counted", {
        ...fields,
        error: error instanceof Error ? error.name : "unknown",
      });
      throw revealForbidden();
    }
    const limited = refusal.hits > clientRefusals.limit;
    log.info("reveal_refused", { ...fields, limited, recorded: refusal.recorded });
    if (!limited) throw revealForbidden();
    overBudget.add(client, refusal.retryAfter);
    throw rateLimited(refusal.retryAfter);
  }

  return {
    requireRevealToken: (route) => async (request) => {
      const presented = checkRevealToken(request);
      if (presented === "legacy") {
        presentedCredentials.set(request, { hash: null, bucket: legacyBucket });
      } else if (presented === "credential") {
        const hash = liveRunCredentialHash(request.headers.get(REVEAL_TOKEN_HEADER)!);
        presentedCredentials.set(request, { hash, bucket: liveRunCredentialBucket(hash) });
      } else {
        return await refuse(request, presented);
      }
      return route(request);
    },
    refuseCredential: (request) => refuse(request, "wrong"),
  };
}

/**
 * Returns a check of the request's header: the legacy token (when configured), else a
 * well-formed credential, else missing or wrong. The legacy comparison hashes both sides first and
 * compares the digests without an early exit, so neither its content nor its length shows in the
 * response time; a credential's format check reads only public structure (prefix, checksum).
 */
function createRevealTokenCheck(
  configuredToken: string,
): (request: Request) => PresentedToken {
  const wanted = configuredToken.length === 0 ? null : digest(configuredToken);
  const isLegacy = (presented: string) => {
    if (wanted === null) return false; // none configured: nothing to compare, nothing to hash
    const actual = digest(presented);
    let difference = 0;
    for (let i = 0; i < wanted.length; i++) difference |= wanted[i] ^ actual[i];
    return difference === 0;
  };
  return (request) => {
    const presented = request.headers.get(REVEAL_TOKEN_HEADER);
    if (presented === null) return "missing";
    if (isLegacy(presented)) return "legacy";
    return isLiveRunCredential(presented) ? "credential" : "wrong";
  };
}

/** The answer to a missing or wrong reveal token, within the client's budget. */
function revealForbidden(): ServiceError {
  return new ServiceError(
    "reveal_forbidden",
    `Revealing secrets needs a live-run credential in the ${REVEAL_TOKEN_HEADER} header.`,
  );
}

/**
 * The name of the token's reveal rate-limit bucket: 16 hex digits of a labelled SHA-256 of the
 * token, so the counter table names the token without holding it (and a new token starts afresh).
 */
export function revealTokenBucket(configuredToken: string): string {
  const hash = digest(`wallet-vault/reveal-rate-limit/v1:${configuredToken}`);
  return toHex(hash.subarray(0, 8));
}
