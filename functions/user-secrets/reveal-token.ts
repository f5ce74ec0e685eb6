/**
 * The server reveal token check: the second credential plaintext retrieval needs, next to the
 * creator's session. Only the service's own server holds it; browsers cannot even send the header
 * (CORS never allows it).
 */
import { ServiceError } from "../_shared/http/errors.ts";
import { REVEAL_TOKEN_HEADER } from "../_shared/http/reveal-header.ts";

const digest = async (value: string) =>
  new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(value)));

/**
 * Returns a check that throws 403 reveal_forbidden unless the request carries the configured
 * token. Both sides are hashed first and the digests compared without an early exit, so neither
 * the token's content nor its length shows in the response time.
 */
export function createRevealTokenCheck(
  configuredToken: string,
): (request: Request) => Promise<void> {
  const expected = digest(configuredToken);
  return async (request) => {
    const presented = request.headers.get(REVEAL_TOKEN_HEADER);
    const actual = await digest(presented ?? "");
    const wanted = await expected;
    let difference = presented === null || configuredToken.length === 0 ? 1 : 0;
    for (let i = 0; i < wanted.length; i++) difference |= wanted[i] ^ actual[i];
    if (difference !== 0) {
      throw new ServiceError(
        "reveal_forbidden",
        `Revealing secrets needs the server's ${REVEAL_TOKEN_HEADER} header.`,
      );
    }
  };
}

/**
 * The name of the token's reveal rate-limit bucket: 16 hex digits of a labelled SHA-256 of the
 * token, so the counter table names the token without holding it (and a new token starts afresh).
 */
export async function revealTokenBucket(configuredToken: string): Promise<string> {
  const hash = await digest(`wallet-vault/reveal-rate-limit/v1:${configuredToken}`);
  return Array.from(hash.slice(0, 8), (b) => b.toString(16).padStart(2, "0")).join("");
}
