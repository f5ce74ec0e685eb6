/**
 * The vault's keys as configuration gives them (ENCRYPTION_KEYS or ENCRYPTION_KEY), and what
 * production refuses: keys and secrets that are not random, or that the local server made.
 */

export interface EncryptionKeySpec {
  readonly id: string;
  readonly key: Uint8Array;
}

/**
 * The marks the local server puts on the development keys it generates (server/dev-keys.ts), so
 * production refuses them wherever they are copied to: the secrets start with `dev-`, and every
 * development encryption key's base64 text starts with `devKeyNotForProd` (its first 12 bytes).
 */
export const DEV_SECRET_PREFIX = "dev-";
export const DEV_ENCRYPTION_KEY_MARK = "devKeyNotForProd";
const DEV_KEY_MARK_BYTES = Uint8Array.from(atob(DEV_ENCRYPTION_KEY_MARK), (c) => c.charCodeAt(0));

const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;
const SINGLE_KEY_ID = "k1";

/** `ENCRYPTION_KEYS=k2:<base64>,k1:<base64>` (first encrypts) or one `ENCRYPTION_KEY=<base64>` (id k1). */
export function parseKeyring(
  keyring: string | undefined,
  single: string | undefined,
  problems: string[],
  production: boolean,
): EncryptionKeySpec[] {
  if (keyring !== undefined && single !== undefined) {
    problems.push("set ENCRYPTION_KEYS or ENCRYPTION_KEY, not both");
    return [];
  }
  const entries = keyring !== undefined
    ? keyring.split(",").map((entry, index) => {
      const separator = entry.indexOf(":");
      return separator < 0
        ? { id: "", encoded: entry, label: `ENCRYPTION_KEYS entry ${index + 1}` }
        : {
          id: entry.slice(0, separator).trim(),
          encoded: entry.slice(separator + 1).trim(),
          label: `ENCRYPTION_KEYS entry ${index + 1}`,
        };
    })
    : single !== undefined
    ? [{ id: SINGLE_KEY_ID, encoded: single, label: "ENCRYPTION_KEY" }]
    : [];
  const keys: EncryptionKeySpec[] = [];
  for (const { id, encoded, label } of entries) {
    // Never echo the value: the message names the entry, not its content.
    if (!KEY_ID.test(id)) {
      problems.push(`${label} needs an id like k2:<base64> (letters, digits, _ or -)`);
      continue;
    }
    const key = decodeBase64(encoded);
    if (key === null || key.length !== 32) {
      problems.push(`${label} must be 32 bytes encoded as base64`);
      continue;
    }
    if (keys.some((k) => k.id === id)) {
      problems.push(`${label} repeats the key id ${id}`);
      continue;
    }
    if (production) problems.push(...weakKey(key, label));
    keys.push({ id, key });
  }
  return keys;
}

/**
 * Production refuses keys that are not 32 random bytes. Thresholds a random key misses by far:
 * fewer than 16 distinct bytes (all zeros, one byte repeated, a short pattern) has a chance near
 * 1e-17, and 32 printable ASCII bytes (a password encoded as base64) near 1e-14.
 */
function weakKey(key: Uint8Array, label: string): string[] {
  if (DEV_KEY_MARK_BYTES.every((byte, i) => key[i] === byte)) {
    return [`${label} is a development key made by the local server; generate one for production`];
  }
  if (new Set(key).size < 16) {
    return [`${label} is not random: too few distinct bytes (all zeros or a repeated pattern)`];
  }
  if (key.every((byte) => byte >= 0x20 && byte <= 0x7e)) {
    return [`${label} is not random: every byte is printable text (a password in base64?)`];
  }
  return [];
}

/** Production refuses development secrets, uniform ones, and one secret used for both roles. */
export function weakSecrets(
  revealToken: string | undefined,
  jwtSecret: string | undefined,
): string[] {
  const problems: string[] = [];
  for (const [name, value] of [["SERVER_REVEAL_TOKEN", revealToken], ["JWT_SECRET", jwtSecret]]) {
    if (value === undefined) continue;
    if (value.startsWith(DEV_SECRET_PREFIX)) {
      problems.push(
        `${name} is a development secret made by the local server; generate one for production`,
      );
    } else if (new Set(value).size < 6) {
      problems.push(`${name} is not random: fewer than 6 distinct characters`);
    }
  }
  // Whoever holds the reveal token could otherwise sign session tokens for anyone, then reveal.
  if (revealToken !== undefined && revealToken === jwtSecret) {
    problems.push("SERVER_REVEAL_TOKEN must differ from JWT_SECRET");
  }
  return problems;
}

function decodeBase64(encoded: string): Uint8Array | null {
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(encoded)) return null;
  try {
    const normalised = encoded.replaceAll("-", "+").replaceAll("_", "/");
    return Uint8Array.from(atob(normalised), (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}
