/**
 * What production refuses of the service's secrets (SERVER_REVEAL_TOKEN, JWT_SECRET) and the
 * vault's keys: values someone else can know or guess. Each problem names the setting, never the
 * value. Every threshold is one a random value of the documented formats (`openssl rand -base64 32`
 * or 48, `-hex 32`, base64url) misses by far: tests/config_weak_secrets_test.ts draws 1,000 of each.
 */

/**
 * The marks the local server puts on the development keys it generates (server/dev-keys.ts), so
 * production refuses them wherever they are copied to: the secrets start with `dev-` (in any case,
 * after any whitespace), and every development encryption key's base64 text starts with
 * `devKeyNotForProd` (its first 12 bytes).
 */
export const DEV_SECRET_PREFIX = "dev-";
export const DEV_ENCRYPTION_KEY_MARK = "devKeyNotForProd";

/**
 * Secrets published in Supabase's self-hosting `.env.example` and CLI, which sites copy unchanged.
 * Compared in lower case, letters and digits only, so a re-cased or re-punctuated copy is found.
 */
const PUBLISHED_DEFAULTS = [
  "super-secret-jwt-token-with-at-least-32-characters-long",
  "your-super-secret-jwt-token-with-at-least-32-characters-long",
  "your-super-secret-and-long-postgres-password",
  "your-encryption-key-32-chars-min",
  "this_password_is_insecure_and_should_be_updated",
  "UpNVntn3cDxHJpq99YMc1T1AQgQpc8kfYTuRgBiYa15BLrx8etQoXz3gZv1/u2oq",
].map(lettersAndDigits);
/** Words that mark a value as a placeholder wherever they appear in it. */
const PLACEHOLDERS = ["changeme", "replaceme", "placeholder"];

/** Characters two secrets may share in a row before one counts as a copy of the other. */
export const SHARED_RUN_CHARACTERS = 16;
/** The same for what they decode to (16 base64 characters hold 12 bytes). */
export const SHARED_RUN_BYTES = 12;
/** A run this long repeated inside one secret is a pattern (a random one: below 10⁻¹¹). */
const REPEATED_CHARACTERS = 8;
const REPEATED_BYTES = 8;
/** A run this long stepping evenly (abcd…, 0123…, 0,1,2,… bytes) is a sequence. */
const SEQUENCE_LENGTH = 16;
/** Characters (and bytes) a random secret of 32 characters or more almost surely exceeds. */
const MIN_DISTINCT = 16;

const DEV_KEY_MARK_BYTES = Uint8Array.from(atob(DEV_ENCRYPTION_KEY_MARK), (c) => c.charCodeAt(0));

/** Whether `value` carries the local server's development mark, however cased or padded. */
function isDevSecret(value: string): boolean {
  return value.trim().toLowerCase().startsWith(DEV_SECRET_PREFIX);
}

/** What production refuses of one encryption key (32 bytes), labelled by its setting. */
export function weakKey(key: Uint8Array, label: string): string[] {
  if (DEV_KEY_MARK_BYTES.every((byte, i) => key[i] === byte)) {
    return [`${label} is a development key made by the local server; generate one for production`];
  }
  const weakness = bytesWeakness(key);
  return weakness === null ? [] : [`${label} is not random: ${weakness}`];
}

/** What production refuses of one secret string (SERVER_REVEAL_TOKEN, JWT_SECRET). */
export function weakSecret(value: string, name: string): string[] {
  const problems: string[] = [];
  // Another service given the same secret (Supabase's own, for JWT_SECRET) would not have the
  // pasted space or line break, and would sign with a different key.
  if (value !== value.trim()) {
    problems.push(`${name} begins or ends with whitespace (a paste?); remove it`);
  }
  const text = value.trim();
  if (isDevSecret(text)) {
    problems.push(
      `${name} is a development secret made by the local server; generate one for production`,
    );
    return problems;
  }
  if (isPublished(text)) {
    problems.push(
      `${name} is a published default or a placeholder (Supabase's example secrets, changeme…); ` +
        "generate one for production",
    );
    return problems;
  }
  const weakness = textWeakness(text);
  if (weakness !== null) problems.push(`${name} is not random: ${weakness}`);
  return problems;
}

/** A secret or key as the shared-run check compares it: its text and what it decodes to. */
export interface ComparedSecret {
  readonly name: string;
  readonly text: string;
  /** A key's bytes; a secret's when it is hex or base64 (secretBytes). */
  readonly bytes: Uint8Array | null;
}

export function comparedSecret(name: string, value: string): ComparedSecret {
  const text = value.trim();
  return { name, text, bytes: secretBytes(text) };
}

/**
 * Pairs that are one secret twice, or near-copies (sharing SHARED_RUN_CHARACTERS in a row, in any
 * case, or SHARED_RUN_BYTES of what they decode to): each pair within `group`, and each of `group`
 * with each of `others` (pairs within `others` are the caller's to check). Each is compared as
 * written, as what it decodes to (hex or base64, twice over), and reversed, so one secret re-encoded
 * or reversed is found as the other (forms).
 */
export function sharedSecrets(
  group: readonly ComparedSecret[],
  others: readonly ComparedSecret[] = [],
): string[] {
  const problems: string[] = [];
  const pairs = [
    ...group.flatMap((a, i) => group.slice(i + 1).map((b) => [a, b] as const)),
    ...group.flatMap((a) => others.map((b) => [a, b] as const)),
  ];
  for (const [a, b] of pairs) {
    const formsOfA = forms(a);
    const formsOfB = forms(b).flatMap((form) => [form, { ...form, value: reverse(form.value) }]);
    const comparisons = formsOfA.flatMap((x) => formsOfB.map((y) => [x, y] as const));
    if (comparisons.some(([x, y]) => x.value === y.value)) {
      problems.push(`${a.name} must differ from ${b.name}`);
    } else if (
      comparisons.some(([x, y]) =>
        x.kind === "text" && y.kind === "text"
          ? sharesRun(x.value.toLowerCase(), y.value.toLowerCase(), SHARED_RUN_CHARACTERS)
          : sharesRun(x.value, y.value, SHARED_RUN_BYTES)
      )
    ) {
      problems.push(
        `${a.name} and ${b.name} share a run of ${SHARED_RUN_CHARACTERS} characters ` +
          `(or ${SHARED_RUN_BYTES} bytes): one is a near-copy of the other; generate each on its own`,
      );
    }
  }
  return problems;
}

/** One way to read a secret, as a Latin-1 string: its text, or bytes it decodes to. */
interface SecretForm {
  readonly kind: "text" | "bytes";
  readonly value: string;
}

/**
 * A secret's text and the bytes it decodes to (its key bytes, or its hex or base64), then what
 * those decode to when they are themselves hex or base64 text (a key hex-encoded, then base64).
 */
function forms(secret: ComparedSecret): SecretForm[] {
  const found: SecretForm[] = [{
    kind: "text",
    value: latin1(new TextEncoder().encode(secret.text)),
  }];
  let bytes = secret.bytes;
  for (let depth = 0; bytes !== null && depth < 3; depth++) {
    found.push({ kind: "bytes", value: latin1(bytes) });
    bytes = secretBytes(latin1(bytes));
  }
  return found;
}

function reverse(value: string): string {
  return Array.from(value).reverse().join("");
}

/** Base64 in either alphabet, padding optional, as bytes; null when it is not. */
export function decodeBase64(encoded: string): Uint8Array | null {
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(encoded)) return null;
  try {
    const normalised = encoded.replaceAll("-", "+").replaceAll("_", "/");
    return Uint8Array.from(atob(normalised), (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

/**
 * What a secret string encodes: 32 bytes or more of hex (`openssl rand -hex 32`) or of base64
 * (`openssl rand -base64 32`, base64url too). Null for any other text.
 */
function secretBytes(text: string): Uint8Array | null {
  const hex = hexBytes(text);
  if (hex !== null) return hex;
  const bytes = decodeBase64(text);
  return bytes !== null && bytes.length >= 32 ? bytes : null;
}

/** 32 bytes or more written as hex, or null. */
function hexBytes(text: string): Uint8Array | null {
  return /^(?:[0-9a-fA-F]{2}){32,}$/.test(text)
    ? Uint8Array.from(text.match(/../g)!, (pair) => parseInt(pair, 16))
    : null;
}

function isPublished(text: string): boolean {
  const plain = lettersAndDigits(text);
  return PLACEHOLDERS.some((word) => plain.includes(word)) ||
    PUBLISHED_DEFAULTS.some((published) => sharesRun(plain, published, SHARED_RUN_CHARACTERS));
}

/**
 * Why a secret's text is not random, or null. Hex has at most 16 distinct characters, so a hex
 * secret is judged by its bytes; base64 is judged as text and then by its bytes too (a password
 * or a counting sequence in base64 reads as random text).
 */
function textWeakness(text: string): string | null {
  const hex = hexBytes(text);
  if (hex !== null) return bytesWeakness(hex);
  const codes = Array.from(text, (c) => c.codePointAt(0)!);
  if (new Set(codes).size < MIN_DISTINCT) {
    return `fewer than ${MIN_DISTINCT} distinct characters (generate it: openssl rand -base64 32)`;
  }
  if (repeatsRun(text, REPEATED_CHARACTERS)) {
    return `a repeated pattern (the same ${REPEATED_CHARACTERS} characters twice)`;
  }
  if (hasSequence(codes)) return `${SEQUENCE_LENGTH} characters in sequence (abcd…, 0123…)`;
  const bytes = secretBytes(text);
  return bytes === null ? null : bytesWeakness(bytes);
}

/**
 * Why bytes are not random, or null: fewer than 16 distinct values (zeros, one byte repeated, a
 * short pattern), all printable (a password encoded as base64), a run stepping evenly (0, 1, 2, …
 * or descending), or a block repeated. For 32 random bytes each has a chance below 10⁻¹³.
 */
function bytesWeakness(bytes: Uint8Array): string | null {
  if (new Set(bytes).size < MIN_DISTINCT) {
    return "too few distinct bytes (all zeros or a repeated pattern)";
  }
  if (bytes.every((byte) => byte >= 0x20 && byte <= 0x7e)) {
    return "every byte is printable text (a password in base64?)";
  }
  if (hasSequence(Array.from(bytes), 256)) return "bytes in sequence (0, 1, 2, … or descending)";
  if (repeatsRun(latin1(bytes), REPEATED_BYTES)) {
    return `a repeated block (the same ${REPEATED_BYTES} bytes twice)`;
  }
  return null;
}

/** Whether SEQUENCE_LENGTH values in a row step by one constant (modulo `modulus`, if given). */
function hasSequence(values: readonly number[], modulus?: number): boolean {
  const step = (i: number) =>
    modulus === undefined
      ? values[i + 1] - values[i]
      : (values[i + 1] - values[i] + modulus) % modulus;
  let run = 1;
  for (let i = 1; i < values.length; i++) {
    run = i >= 2 && step(i - 1) === step(i - 2) ? run + 1 : 2;
    if (run >= SEQUENCE_LENGTH) return true;
  }
  return false;
}

/** Whether some `length` characters in a row occur twice in `text` (overlapping counts). */
function repeatsRun(text: string, length: number): boolean {
  const seen = new Set<string>();
  for (let i = 0; i + length <= text.length; i++) {
    const run = text.slice(i, i + length);
    if (seen.has(run)) return true;
    seen.add(run);
  }
  return false;
}

/** Whether `a` and `b` have `length` characters in a row in common. */
function sharesRun(a: string, b: string, length: number): boolean {
  const runs = new Set<string>();
  for (let i = 0; i + length <= b.length; i++) runs.add(b.slice(i, i + length));
  for (let i = 0; i + length <= a.length; i++) {
    if (runs.has(a.slice(i, i + length))) return true;
  }
  return false;
}

function lettersAndDigits(text: string): string {
  return text.toLowerCase().replace(/[^a-z0-9]/g, "");
}

function latin1(bytes: Uint8Array): string {
  return String.fromCharCode(...bytes);
}
