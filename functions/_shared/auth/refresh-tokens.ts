/**
 * Refresh tokens: 256 bits, handed out once and stored only as their SHA-256 hash, so a database
 * reader cannot mint sessions. A sign-in's first token is random; each successor is derived from
 * the token it replaces with a server key (HMAC-SHA-256), so a client whose refresh answer was
 * lost can send the same token again and be handed the same successor (refresh.ts), while a
 * token's successor stays unknowable to anyone without the key.
 */

import { randomBase64Url } from "./random.ts";

export function newRefreshToken(): string {
  return randomBase64Url(32);
}

export async function hashRefreshToken(token: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token)));
}

/** The successor of a presented refresh token, the same every time it is asked for. */
export type RefreshSuccessor = (presented: string) => Promise<string>;

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
  return async (presented) => {
    key ??= derive();
    const mac = await crypto.subtle.sign("HMAC", await key, new TextEncoder().encode(presented));
    return new Uint8Array(mac).toBase64({ alphabet: "base64url", omitPadding: true });
  };
}
