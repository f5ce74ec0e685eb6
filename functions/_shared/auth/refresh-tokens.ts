/**
 * Refresh tokens: 256 bits, handed out once and stored only as their SHA-256 hash, so a database
 * reader cannot mint sessions. A token is random, unless the refresh that hands it out carries a
 * retry key's commitment: then it is derived from the token it replaces and that commitment with a
 * server key (HMAC-SHA-256), so a client whose answer was lost can try again and be handed the same
 * successor (refresh.ts). The client's first try sends only the commitment (the key's SHA-256); the
 * key itself travels only on a retry, so a copy of the first request cannot pass for one.
 */

import { createHash } from "node:crypto";
import { fromBase64, toBase64Url } from "../bytes.ts";
import { randomBase64Url } from "./random.ts";

export function newRefreshToken(): string {
  return randomBase64Url(32);
}

/** Synchronous: WebCrypto's digest is an asynchronous call that costs more than the hash itself. */
export function hashRefreshToken(token: string): Uint8Array {
  return new Uint8Array(createHash("sha256").update(token, "utf8").digest());
}

/** What a retry key may be: URL-safe text, so it and a token join unambiguously. */
export const RETRY_KEY = /^[A-Za-z0-9_-]{22,200}$/;

/**
 * A retry key's commitment as sent: its SHA-256, base64url without padding, and in the one
 * spelling that encoding has (the last character carries two zero bits), so a digest has one text.
 */
export const RETRY_KEY_HASH = /^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/;

/** A retry key's commitment: as stored, and as sent (RETRY_KEY_HASH). */
export interface RetryKeyCommitment {
  readonly bytes: Uint8Array;
  readonly text: string;
}

/** The commitment of a retry key: SHA-256 of its UTF-8. */
export function retryKeyCommitment(retryKey: string): RetryKeyCommitment {
  const bytes = hashRefreshToken(retryKey);
  return { bytes, text: toBase64Url(bytes) };
}

/** A commitment as sent, already checked against RETRY_KEY_HASH. */
export function parseRetryKeyHash(text: string): RetryKeyCommitment {
  return { bytes: fromBase64(text.replaceAll("-", "+").replaceAll("_", "/")), text };
}

/**
 * Whether two digests are equal, looking at every byte whatever the first difference: a retry's
 * key is checked against the stored commitment without its timing telling how close a guess came.
 */
export function sameDigest(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i] ^ b[i];
  return difference === 0;
}

/**
 * The successor of a presented token under a retry key's commitment (RETRY_KEY_HASH's text), the
 * same every time it is asked for.
 */
export type RefreshSuccessor = (presented: string, commitment: string) => Promise<string>;

/**
 * Successors under a key derived from `secret` (JWT_SECRET, or the vault's active key) with HKDF for
 * this use alone, so no value computed here is ever a JWT signature or a vault key, nor the other
 * way round. Not the signing key: a retry across a signing-key switch still gets its successor.
 * Imported once, lazily.
 */
export function refreshSuccessors(secret: string | Uint8Array): RefreshSuccessor {
  let key: Promise<CryptoKey> | null = null;
  const derive = async () =>
    crypto.subtle.deriveKey(
      {
        name: "HKDF",
        hash: "SHA-256",
        salt: new Uint8Array(0),
        info: new TextEncoder().encode("wallet-vault/refresh-token-successor/v2"),
      },
      await crypto.subtle.importKey(
        "raw",
        typeof secret === "string" ? new TextEncoder().encode(secret) : Uint8Array.from(secret),
        "HKDF",
        false,
        ["deriveKey"],
      ),
      { name: "HMAC", hash: "SHA-256", length: 256 },
      false,
      ["sign"],
    );
  return async (presented, commitment) => {
    key ??= derive();
    const input = new TextEncoder().encode(`${presented}\n${commitment}`);
    const mac = await crypto.subtle.sign("HMAC", await key, input);
    return toBase64Url(new Uint8Array(mac));
  };
}
