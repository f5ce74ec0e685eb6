/** Random tokens as URL-safe text (base64url without padding). */
export function randomBase64Url(bytes: number): string {
  const raw = crypto.getRandomValues(new Uint8Array(bytes));
  return btoa(String.fromCharCode(...raw)).replaceAll("+", "-").replaceAll("/", "_").replace(
    /=+$/,
    "",
  );
}
