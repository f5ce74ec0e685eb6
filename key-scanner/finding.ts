/**
 * What the key scanner reports: where a credential is, its kind, the value masked, and a
 * fingerprint for the allow-list. The value itself stays out of the object, so a printed or
 * logged finding can never show it.
 */

export interface Finding {
  /** As given, or relative to the scanned root. */
  readonly file: string;
  /** 1-based. */
  readonly line: number;
  readonly column: number;
  /** What was found, e.g. "OpenAI-style key (sk-…)" or "value assigned to provider_b_key". */
  readonly kind: string;
  /** A few leading characters and the length: enough to find it, never enough to use it. */
  readonly masked: string;
  /** Not the working copy: "staged" (the index), or "commit <sha>" (history; a commit holding it). */
  readonly source?: string;
  /** The git blob id of the content it is in, when known (the allow-list matches it). */
  readonly blob?: string;
  /** A slow hash of the value (fingerprintOf), once the report is made. */
  readonly fingerprint?: string;
}

/** Each finding's value, for its fingerprint only. */
const VALUES = new WeakMap<Finding, string>();

export function rememberValue(finding: Finding, value: string): void {
  VALUES.set(finding, value);
}

/** The finding with some fields changed (a path made relative, the blob id), value kept. */
export function amend(finding: Finding, changes: Partial<Finding>): Finding {
  const amended = { ...finding, ...changes };
  const value = VALUES.get(finding);
  if (value !== undefined) VALUES.set(amended, value);
  return amended;
}

/**
 * 16 hex digits of PBKDF2-SHA-256 of the value (10,000 iterations): the same value gives the same
 * fingerprint in every file and commit, so an allow-list entry covers it wherever it is, and the
 * fingerprint gives away no short value by trying candidates. Each value is hashed once a run.
 */
export function fingerprintOf(finding: Finding): Promise<string> {
  const value = VALUES.get(finding);
  if (value === undefined) throw new Error("fingerprintOf: a finding without its value");
  let fingerprint = fingerprints.get(value);
  if (fingerprint === undefined) {
    fingerprint = pbkdf2Fingerprint(value);
    fingerprints.set(value, fingerprint);
  }
  return fingerprint;
}

const fingerprints = new Map<string, Promise<string>>();

async function pbkdf2Fingerprint(value: string): Promise<string> {
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey("raw", encoder.encode(value), "PBKDF2", false, [
    "deriveBits",
  ]);
  const bits = await crypto.subtle.deriveBits(
    {
      name: "PBKDF2",
      hash: "SHA-256",
      salt: encoder.encode("scan-keys fingerprint"),
      iterations: 10_000,
    },
    key,
    64,
  );
  return Array.from(new Uint8Array(bits), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The leading characters (at most 4, at most a quarter of the value) and the length. */
export function maskSecret(value: string): string {
  const chars = Array.from(value);
  const shown = Math.min(4, Math.floor(chars.length / 4));
  return `${chars.slice(0, shown).join("")}…(${chars.length} chars)`;
}

/** A value found in a text, at [start, end) of that text, and what it is. */
export type Report = (start: number, end: number, value: string, kind: string) => void;
