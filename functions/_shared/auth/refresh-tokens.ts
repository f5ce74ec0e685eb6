/**
 * Refresh tokens: 256 bits, handed out once and stored only as their SHA-256 hash, so a database
 * reader cannot mint sessions. A token is random, unless the refresh that hands it out carries a
 * retry key (a random value the client sends with every try of that one refresh): then it is
 * derived from the token it replaces and that key with a server key (HMAC-SHA-256), so a client
 * whose answer was lost can try again and be handed the same successor (refresh.ts). Knowing it
 * takes the spent token, the client's retry key (stored only as a hash) and the server key.
 */

import { toBase64Url } from "../bytes.ts";
import { randomBase64Url } from "./random.ts";

export function newRefreshToken(): string {
  return randomBase64Url(32);
}

export async function hashRefreshToken(token: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token)));
}

/** What a retry key may be: URL-safe text, so it and a token join unambiguously. */
export const RETRY_KEY = /^[A-Za-z0-9_-]{22,200}$/;

/** The successor of a presented token under a retry key, the same every time it is asked for. */
export type RefreshSuccessor = (presented: string, retryKey: string) => Promise<string>;

/**
 * Successors under a key derived from `secret` (JWT_SECRET) with HKDF for this use alone, so no
 * value computed here is ever a JWT signature, nor the other way round. Imported once, lazily.
 */
export function refreshSuccessors(secret: string): RefreshSuccessor {
  let key: Promise<CryptoKey> | null = null;
  const derive = async () =>
    crypto.subtle.deriveKey(
      {
        name: "HKDF",
        hash: "SHA-256",
        salt: new Uint8Array(0),
        info: new TextEncoder().encode("wallet-vault/refresh-token-successor/v1"),
      },
      await crypto.subtle.importKey(
        "raw",
        new TextEncoder().encode(secret),
        "HKDF",
        false,
        ["deriveKey"],
      ),
      { name: "HMAC", hash: "SHA-256", length: 256 },
      false,
      ["sign"],
    );
  return async (presented, retryKey) => {
    key ??= derive();
    const input = new TextEncoder().encode(`${presented}\n${retryKey}`);
    const mac = await crypto.subtle.sign("HMAC", await key, input);
    return toBase64Url(new Uint8Array(mac));
  };
}
