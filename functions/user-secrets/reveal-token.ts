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

/**
 * Returns a check that throws 403 reveal_forbidden unless the request carries the configured
 * token. Both sides are hashed first and the digests compared without an early exit, so neither
 * the token's content nor its length shows in the response time.
 */
export function createRevealTokenCheck(
  configuredToken: string,
): (request: Request) => void {
  const wanted = digest(configuredToken);
  return (request) => {
    const presented = request.headers.get(REVEAL_TOKEN_HEADER);
    const actual = digest(presented ?? "");
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
export function revealTokenBucket(configuredToken: string): string {
  const hash = digest(`wallet-vault/reveal-rate-limit/v1:${configuredToken}`);
  return toHex(hash.subarray(0, 8));
}
