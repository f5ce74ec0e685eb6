/**
 * Whether a value reads as a credential: random rather than a word, a name or a typed run, and
 * not a placeholder someone wrote instead of a key. Each check looks at the value as a whole: a
 * real key is random, and may hold any short word by chance.
 */

/**
 * Whether a key's body looks random rather than like a word, a name or a typed run: eight or more
 * distinct characters, and letters mixed with digits, or both cases mixed, or 16 digits or more. A
 * random body of 20 or more characters from the key alphabets (hex from 32) fails this less than
 * once in a million; an identifier in one case, or prose, fails it.
 */
export function looksRandom(body: string): boolean {
  if (distinctCharacters(body) < 8) return false;
  let upper = 0;
  let lower = 0;
  let digits = 0;
  for (const c of body) {
    if (c >= "A" && c <= "Z") upper++;
    else if (c >= "a" && c <= "z") lower++;
    else if (c >= "0" && c <= "9") digits++;
  }
  return (digits > 0 && upper + lower > 0) || (upper > 0 && lower > 0) ||
    (digits >= 16 && digits === body.length);
}

/**
 * Looks like a credential rather than a word, a path, a number or a reference: letters and digits,
 * or (32 characters or more) random-looking letters alone, as a letters-only key is.
 */
export function looksLikeSecret(value: string): boolean {
  if (value.length < 8 || value.length > 4096 || /\s/.test(value)) return false;
  const mixed = /[0-9]/.test(value) && /[A-Za-z]/.test(value) && distinctCharacters(value) >= 6;
  return (mixed || (value.length >= 32 && looksRandom(value))) && !isPlaceholder(value) &&
    !/^[a-z]+:\/\//i.test(value) && !/^[0-9.:-]+$/.test(value);
}

function distinctCharacters(value: string): number {
  return new Set(value).size;
}

/**
 * Characters no key alphabet has (keys are base62, base64, hex, with `-` or `_`): a value holding
 * one of these is a template or an elision, wherever it appears.
 */
const TEMPLATE_MARKS = /[<>…]|\.\.\.|\*\*\*|\{\{|\}\}|\$\{|\$\(/;
/**
 * A whole value that is an interpolation: `{name}` (Python, C#), `#{name}` (Ruby), `\(name)`
 * (Swift).
 */
const INTERPOLATION = /^(?:#?\{[\w.]+\}|\\\([\w.]+\))$/;
/**
 * A reference to the value, not the value: `$X`, `${X}`, `%X%`, `process.env.X`, `env(X)`,
 * `os.getenv(`. Whole words only: a random key may hold "geTENv" by chance.
 */
const REFERENCE =
  /^[$%]|\bprocess\.env\b|\bDeno\.env\b|\bimport\.meta\.env\b|\bos\.environ\b|\bgetenv\b|\benv\(/i;
/**
 * Words people type instead of a key. Each counts only as a whole word of the value (between
 * `-`, `_`, `.`, `/`, `:` or the ends), so a random key that happens to contain "here" or "your"
 * is still a key; a word ending in one counts too (AWS's documented AKIAIOSFODNN7EXAMPLE).
 */
const PLACEHOLDER_WORDS = new Set([
  "your",
  "here",
  "example",
  "sample",
  "placeholder",
  "changeme",
  "redacted",
  "dummy",
  "replace",
  "insert",
]);
/** Long enough that a random key ending in one is a one-in-billions chance. */
const PLACEHOLDER_SUFFIXES = ["example", "examplekey", "placeholder", "changeme", "redacted"];

/**
 * A value someone typed instead of a key. A placeholder word counts only in a value without a
 * long random part: a random key in base64url splits at its `-` and `_` into parts, and one of
 * them may be "here" or "xxx" by chance.
 */
export function isPlaceholder(value: string): boolean {
  if (TEMPLATE_MARKS.test(value) || REFERENCE.test(value) || INTERPOLATION.test(value)) return true;
  const parts = value.split(/[-_./:]+/).filter((part) => part !== "");
  if (parts.length === 0) return true;
  const words = parts.map((part) => part.toLowerCase());
  const randomPart = parts.some((part) => part.length >= 16 && looksRandom(part));
  if (
    !randomPart &&
    words.some((word) => PLACEHOLDER_WORDS.has(word) || /^(x{3,}|\*+)$/.test(word))
  ) {
    return true;
  }
  if (PLACEHOLDER_SUFFIXES.some((suffix) => words[words.length - 1].endsWith(suffix))) return true;
  // Words in one case each, joined by dashes or underscores, then at most a short tail: typed
  // (`sk-other-creator-value-1`), where a random key's parts mix cases and digits.
  const pieces = value.split(/[-_]/);
  const tail = pieces.pop()!;
  if (pieces.length >= 3 && tail.length < 8 && pieces.every((p) => /^(?:[a-z]+|[A-Z]+)$/.test(p))) {
    return true;
  }
  // What follows a provider prefix (sk-, sk-live-, AKIA…), or words (`sk-ideographic-0123456789`):
  // one character repeated, or typed runs. Eight characters at least: what is left of a random
  // base64url key once its leading parts of letters are taken off may be a character or two.
  const body = value.replace(/^(?:[A-Za-z]{1,8}[-_])+/, "");
  const afterWords = value.replace(/^(?:[A-Za-z]+[-_])+/, "");
  return [body, afterWords].some((rest) =>
    rest.length >= 8 && (/^(.)\1*$/s.test(rest) || sequentialShare(rest) >= 0.8)
  );
}

/**
 * The share of characters in ascending runs of four or more ("0123", "abcdef", "7890"): near 1
 * for "0123456789abcdef", how people type a fake key; a random key has a run of six perhaps once
 * in a billion keys, and then it is a small share of the key, not the whole of it.
 */
function sequentialShare(value: string): number {
  if (value.length === 0) return 0;
  let inRuns = 0;
  let run = 1;
  const next = (a: string, b: string) =>
    /[0-9a-zA-Z]/.test(a) && /[0-9a-zA-Z]/.test(b) &&
    (b.charCodeAt(0) - a.charCodeAt(0) === 1 || (a === "9" && b === "0"));
  for (let i = 1; i <= value.length; i++) {
    if (i < value.length && next(value[i - 1], value[i])) {
      run++;
      continue;
    }
    if (run >= 4) inRuns += run;
    run = 1;
  }
  return inRuns / value.length;
}
