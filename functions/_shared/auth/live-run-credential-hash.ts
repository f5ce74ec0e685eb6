/**
 * What the service keeps of a live-run credential: its SHA-256, the one key it is looked up by.
 * A credential is 214 random bits (live-run-credential-format.ts), so a plain hash cannot be
 * walked back, and a lookup by hash compares nothing in the open.
 */
import { sha256 } from "@noble/hashes/sha2";
import { toHex } from "../bytes.ts";

/** The stored hash of `credential` (32 bytes). Synchronous: WebCrypto's digest costs more here. */
export function liveRunCredentialHash(credential: string): Uint8Array {
  return sha256(new TextEncoder().encode(credential));
}

/**
 * The credential's reveal rate-limit bucket: 16 hex digits of its hash, so the counter table names
 * the credential without holding it (a successor starts afresh).
 */
export function liveRunCredentialBucket(hash: Uint8Array): string {
  return `credential:${toHex(hash.subarray(0, 8))}`;
}
