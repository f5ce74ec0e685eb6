/**
 * The vault's keys as configuration gives them (ENCRYPTION_KEYS or ENCRYPTION_KEY). What production
 * refuses of them (keys that are not random, that the local server made, or near-copies of each
 * other) is weak-secrets.ts's.
 */
import {
  type ComparedSecret,
  comparedSecret,
  decodeBase64,
  sharedSecrets,
  weakKey,
} from "./weak-secrets.ts";

export { DEV_ENCRYPTION_KEY_MARK, DEV_SECRET_PREFIX } from "./weak-secrets.ts";

export interface EncryptionKeySpec {
  readonly id: string;
  readonly key: Uint8Array;
}

const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;
const SINGLE_KEY_ID = "k1";

/** A key as configured: the setting (or entry) that gave it, and its text, for the weak checks. */
export interface EncryptionKeyEntry extends EncryptionKeySpec {
  readonly label: string;
  readonly encoded: string;
}

/** `ENCRYPTION_KEYS=k2:<base64>,k1:<base64>` (first encrypts) or one `ENCRYPTION_KEY=<base64>` (id k1). */
export function parseEncryptionKeys(
  list: string | undefined,
  single: string | undefined,
  problems: string[],
  production: boolean,
): EncryptionKeyEntry[] {
  if (list !== undefined && single !== undefined) {
    problems.push("set ENCRYPTION_KEYS or ENCRYPTION_KEY, not both");
    return [];
  }
  const entries = list !== undefined
    ? list.split(",").map((entry, index) => {
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
  const keys: EncryptionKeyEntry[] = [];
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
    keys.push({ id, key, label, encoded });
  }
  if (production) problems.push(...sharedSecrets(keys.map(encryptionKeySecret)));
  return keys;
}

/** A key as the shared-run check compares it with the others and with the service's secrets. */
export function encryptionKeySecret(entry: EncryptionKeyEntry): ComparedSecret {
  return { ...comparedSecret(entry.label, entry.encoded), bytes: entry.key };
}
