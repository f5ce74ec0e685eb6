/**
 * Refresh tokens: 256 random bits, handed out once and stored only as their SHA-256 hash, so a
 * database reader cannot mint sessions.
 */

import { randomBase64Url } from "./random.ts";

export function newRefreshToken(): string {
  return randomBase64Url(32);
}

export async function hashRefreshToken(token: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token)));
}
