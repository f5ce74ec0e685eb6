/**
 * Credentials by where they are used rather than by their shape: an `Authorization: Bearer` or
 * `Authorization: Token` token, and the password (or GitHub's token) in a URL.
 */
import type { Report } from "./finding.ts";
import { isPlaceholder, looksLikeSecret, looksRandom } from "./values.ts";

/** `Authorization: Bearer <token>` in a header, a curl line or code; group 1 is the token. */
const BEARER = /(?<![A-Za-z0-9_])[Bb](?:earer|EARER)[ \t]+([A-Za-z0-9._~+/-]{32,}=*)/g;
const BEARER_KIND = "bearer token (Authorization: Bearer …)";

/**
 * `Authorization: Token <token>` (Django REST framework's scheme, and APIs built on it) as a header,
 * a header given in code (`{"Authorization": "Token …"}`, `headers["Authorization"] = "Token …"`) or
 * a curl line; group 1 is the token. The word "token" alone, as prose uses it, is not enough.
 */
const AUTHORIZATION_TOKEN =
  /(?<![A-Za-z0-9_])authorization["'`]?[ \t]*\]?[ \t]*[:=,][ \t]*["'`]?token[ \t]+([A-Za-z0-9._~+/-]{20,}=*)/gi;
const AUTHORIZATION_TOKEN_KIND = "token (Authorization: Token …)";

/**
 * Credentials in a URL, `scheme://user:password@host` (a database URL, a registry, basic auth);
 * group 1 is the user, group 2 the password. The scheme never starts inside a word, so a long run
 * of letters is read once.
 */
const URL_CREDENTIALS =
  /(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*:\/\/([^\s:@\/?#"'`<>]{1,256}):([^\s@\/?#"'`<>]{1,256})@(?=[A-Za-z0-9[])/g;
const URL_PASSWORD_KIND = "password in a URL (scheme://user:…@host)";
const URL_TOKEN_KIND = "token in a URL (https://…:x-oauth-basic@)";

/** Bearer tokens 32 or more characters long that look random and like a secret. */
export function findBearerTokens(text: string, report: Report): void {
  for (const match of text.matchAll(BEARER)) {
    const value = match[1];
    if (!looksLikeSecret(value) || !looksRandom(value)) continue;
    const start = match.index + match[0].length - value.length;
    report(start, start + value.length, value, BEARER_KIND);
  }
}

/** `Authorization: Token` values of 20 characters or more that look random and like a secret. */
export function findAuthorizationTokens(text: string, report: Report): void {
  if (!text.includes("uthorization") && !text.includes("UTHORIZATION")) return;
  for (const match of text.matchAll(AUTHORIZATION_TOKEN)) {
    const value = match[1];
    if (!looksLikeSecret(value) || !looksRandom(value)) continue;
    const start = match.index + match[0].length - value.length;
    report(start, start + value.length, value, AUTHORIZATION_TOKEN_KIND);
  }
}

/**
 * A URL's password that looks like a secret, or 8 or more random-looking letters; for GitHub's
 * `https://<token>:x-oauth-basic@github.com/`, the user.
 */
export function findUrlCredentials(text: string, report: Report): void {
  if (!text.includes("://")) return;
  for (const match of text.matchAll(URL_CREDENTIALS)) {
    const [, user, password] = match;
    const token = password === "x-oauth-basic";
    const value = token ? user : password;
    // A password of letters alone is common enough to count when it looks random.
    if (!looksLikeSecret(value) && !(value.length >= 8 && looksRandom(value))) continue;
    if (isPlaceholder(value)) continue;
    // The user ends where `://` and the user end; the password right after its `:`.
    const userAt = match.index + match[0].indexOf("://") + 3;
    const start = token ? userAt : userAt + user.length + 1;
    report(start, start + value.length, value, token ? URL_TOKEN_KIND : URL_PASSWORD_KIND);
  }
}
