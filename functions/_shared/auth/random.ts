/** Random tokens as URL-safe text (base64url without padding). */
export function randomBase64Url(bytes: number): string {
  return crypto.getRandomValues(new Uint8Array(bytes)).toBase64({
    alphabet: "base64url",
    omitPadding: true,
  });
}
