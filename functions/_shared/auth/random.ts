import { toBase64Url } from "../bytes.ts";

/** `bytes` random bytes as a token: URL-safe text (base64url without padding). */
export function randomBase64Url(bytes: number): string {
  return toBase64Url(crypto.getRandomValues(new Uint8Array(bytes)));
}
