/**
 * The server reveal token check: the second credential plaintext retrieval needs, next to the
 * creator's session. Only the service's own server holds it, and a page on another origin cannot
 * even send the header (CORS never allows it); a page never holds the token to send.
 */
import { createHash } from "node:crypto";
import { toHex } from "../_shared/bytes.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import { REVEAL_TOKEN_HEADER } from "../_shared/http/reveal-header.ts";

// Synchronous: WebCrypto's digest is an asynchronous op, ~70 µs of server CPU per reveal in
// bench:cpu-profile, for a token a few dozen bytes long.
const digest = (value: string): Uint8Array => createHash("sha256").update(value, "utf8").digest();

/** What a request's reveal token is: the configured one, none at all, or another. */
export type PresentedToken = "right" | "missing" | "wrong";

/**
 * Returns a check of the request's reveal token against the configured one. Both sides are hashed
 * first and the digests compared without an early exit, so neither the token's content nor its
 * length shows in the response time.
 */
export function createRevealTokenCheck(
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
export function revealForbidden(): ServiceError {
  return new ServiceError(
    "reveal_forbidden",
    `Revealing secrets needs the server's ${REVEAL_TOKEN_HEADER} header.`,
  );
}

/** The rate-limit bucket of a client address's wrong reveal tokens. */
export const wrongTokenBucket = (client: string): string => `vault:reveal:wrong-token:ip:${client}`;

/** How many client addresses a process remembers as over their budget (a few hundred KiB). */
const OVER_BUDGET_KEPT = 4096;

/** Wrong tokens a client sent while known to be over its budget, refused without a log line each. */
export interface UnloggedRefusals {
  readonly client: string;
  readonly refusals: number;
}

/**
 * The client addresses this process has seen go over their wrong-token budget, each until its
 * window ends: their further wrong tokens are refused without asking the database, so a flood of
 * guesses costs the database one count per process and window. Another process learns the same
 * from the database on its first such request. Those refusals are only counted here, so a flood
 * is one log line per client and window, not one per guess: `ended()` hands over the counts of
 * windows that are over.
 */
export function createOverBudgetClients(now: () => number = Date.now) {
  // In the order added, so in the order their windows end (every window is the same length).
  const until = new Map<string, { end: number; refusals: number }>();
  const done: UnloggedRefusals[] = [];
  const close = (client: string, refusals: number) => {
    until.delete(client);
    if (refusals > 0) done.push({ client, refusals });
  };
  return {
    /**
     * Seconds until `client` may try again, counting this try as one of its unlogged refusals, or
     * null when it is not known to be over.
     */
    retryAfter(client: string): number | null {
      const entry = until.get(client);
      if (entry === undefined) return null;
      const left = Math.ceil((entry.end - now()) / 1000);
      if (left > 0) {
        entry.refusals++;
        return left;
      }
      close(client, entry.refusals);
      return null;
    },
    add(client: string, retryAfterSeconds: number): void {
      const known = until.get(client);
      if (known !== undefined) close(client, known.refusals);
      if (until.size >= OVER_BUDGET_KEPT) {
        const [oldest, entry] = until.entries().next().value!;
        close(oldest, entry.refusals);
      }
      until.set(client, { end: now() + retryAfterSeconds * 1000, refusals: 0 });
    },
    /** The unlogged refusals of every window that has ended (or was forgotten), once each. */
    ended(): UnloggedRefusals[] {
      for (const [client, entry] of until) {
        if (entry.end > now()) break;
        close(client, entry.refusals);
      }
      return done.splice(0);
    },
  };
}

/**
 * The name of the token's reveal rate-limit bucket: 16 hex digits of a labelled SHA-256 of the
 * token, so the counter table names the token without holding it (and a new token starts afresh).
 */
export function revealTokenBucket(configuredToken: string): string {
  const hash = digest(`wallet-vault/reveal-rate-limit/v1:${configuredToken}`);
  return toHex(hash.subarray(0, 8));
}
