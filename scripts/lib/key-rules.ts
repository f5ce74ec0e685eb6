/**
 * What a committed provider credential looks like: the key shapes providers document, the names
 * whose value is a credential, and what is only a placeholder. A finding shows the value masked.
 */
import { SECRET_TYPES } from "../../functions/_shared/vault/secret-types.ts";

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
}

interface ShapeRule {
  readonly kind: string;
  readonly pattern: RegExp;
  /** Random keys of this shape virtually always contain a digit; a digitless match is prose. */
  readonly needsDigit: boolean;
}

// Each pattern: not glued to a preceding letter or digit, and (for open-ended lengths) greedy to
// the end of the token. Prefixes are the providers' documented ones. Text is matched with its
// escapes and percent-encodings blanked (blankEncodings), so the `n` of `\n` is not "a letter".
export const SHAPES: readonly ShapeRule[] = [
  shape("Anthropic-style key (sk-ant-…)", /sk-ant-[A-Za-z0-9_-]{20,}/),
  shape("OpenAI-style key (sk-…)", /sk-(?!ant-)[A-Za-z0-9_-]{20,}/),
  shape("Stripe-style key (sk_live_…)", /[rs]k_(?:live|test)_[A-Za-z0-9]{20,}/),
  shape("AWS access key id (AKIA…)", /(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])/, false),
  shape("GitHub token (ghp_…)", /gh[pousr]_[A-Za-z0-9]{36,}/),
  shape("GitHub token (github_pat_…)", /github_pat_[A-Za-z0-9_]{40,}/),
  shape("Slack token (xox…)", /xox[abposr]-[A-Za-z0-9-]{10,}/),
  shape("Google API key (AIza…)", /AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])/),
  shape("Hugging Face token (hf_…)", /hf_[A-Za-z0-9]{30,}/),
  shape("Replicate token (r8_…)", /r8_[A-Za-z0-9]{30,}/),
  shape("Groq key (gsk_…)", /gsk_[A-Za-z0-9]{40,}/),
  shape("xAI key (xai-…)", /xai-[A-Za-z0-9]{40,}/),
  shape("Perplexity key (pplx-…)", /pplx-[A-Za-z0-9]{40,}/),
  shape("private key block", /-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----/, false),
];

function shape(kind: string, pattern: RegExp, needsDigit = true): ShapeRule {
  return { kind, pattern: new RegExp(`(?<![A-Za-z0-9])(?:${pattern.source})`, "g"), needsDigit };
}

/** Names whose value is a credential, compared lower-cased without `_` and `-`. */
const CREDENTIAL_NAMES = new Set(SECRET_TYPES.map(normalizeName));
const CREDENTIAL_SUFFIXES = ["apikey", "secretkey", "accesskey", "apitoken", "authtoken"];

function normalizeName(name: string): string {
  return name.toLowerCase().replace(/[_-]/g, "");
}

export function isCredentialName(name: string): boolean {
  const normalized = normalizeName(name);
  return CREDENTIAL_NAMES.has(normalized) ||
    CREDENTIAL_SUFFIXES.some((suffix) => normalized.endsWith(suffix));
}

/**
 * Characters written as an escape (`\n`, `\"`, `\u0022` in JSON strings, notebooks, HAR files) or
 * percent-encoded (`%3D`, `%20` in URLs): their last character is a letter or digit that is not
 * part of what follows, yet glued to it. Percent-encodings count when ASCII or a whole UTF-8
 * character (`%E2%80%9C`), never a lone `%DE…`, which is how `%DEV_KEY%` (a Windows variable
 * reference, not a value) starts.
 */
const ENCODED_CHARACTER =
  /\\(?:[nrtbf"\\/]|u[0-9a-fA-F]{4})|%[0-7][0-9A-Fa-f]|%[C-Fc-f][0-9A-Fa-f](?:%[89ABab][0-9A-Fa-f]){1,3}/g;

/** An escaped double quote, as JSON writes one inside a string (`\"`, `\u0022`). */
const ESCAPED_QUOTE = /^\\(?:"|u0022)$/i;
/** What may follow a closing quote: the end, space, or what separates or closes a value. */
const AFTER_CLOSING_QUOTE = /^(?:$|[\s:,;=}\]\\)])/;

/**
 * The text with each escape and percent-encoding overwritten by spaces of the same length: what
 * they encode no longer glues to a key, and columns stay those of the text. An escaped double
 * quote stays a quote, next to what it quotes (last when it opens, first when it closes), so JSON
 * held in a JSON string (`"{\"API_KEY\": \"…\"}"`) still quotes its values: a quoted value is a
 * literal even in code.
 */
export function blankEncodings(text: string): string {
  return text.replace(ENCODED_CHARACTER, (encoded, offset: number) => {
    const blank = " ".repeat(encoded.length - 1);
    const before = text[offset - 1];
    const after = text.charAt(offset + encoded.length);
    // Beside a real quote (`"\"<key>\""`), the real one quotes the value: blanked as before.
    if (!ESCAPED_QUOTE.test(encoded) || before === '"' || after === '"') return `${blank} `;
    return AFTER_CLOSING_QUOTE.test(after) ? `"${blank}` : `${blank}"`;
  });
}

/**
 * The value a name is given, read where the name's match ends: a quoted string (groups 1 to 3) or a
 * bare token (group 4). A bare token runs on through `&` (Django's generated SECRET_KEY has them),
 * so one in a query string carries the parameters after it.
 */
export const VALUE_AT = /(?:"([^"\n]*)"|'([^'\n]*)'|`([^`\n]*)`|([^\s,;#'"`)}\]]+))/y;

/**
 * Where a name is given a value; group 1 is the name's quote, 2 the name, and the value starts
 * where the match ends (VALUE_AT), read only after a credential's name: the search goes on inside
 * other names' values, so an assignment within one (`Client(api_key=\"…\")` in a notebook line,
 * JSON held in a JSON string) is found too.
 *
 * - A name (optionally quoted, optionally after `export`, `.` or `[` as in `client.api_key`,
 *   `process.env.X`, `os.environ["X"]`, optionally then `]`), then `=` or `:` (not `==`, `=>`,
 *   `::`). An escaped `[\"X\"]` is matched blanked, as `[ "X" ]`.
 * - Dockerfile's older `ENV NAME value`, without `=`.
 */
export const ASSIGNMENTS: readonly RegExp[] = [
  new RegExp(
    String.raw`(?<![A-Za-z0-9_$])(["']?)([A-Za-z_][A-Za-z0-9_-]*)\1(?:[ \t]*\])?[ \t]*` +
      String.raw`(?::(?![:=])|=(?![=>~]))[ \t]*`,
    "g",
  ),
  new RegExp(String.raw`^[ \t]*ENV[ \t]+()([A-Za-z_][A-Za-z0-9_]*)[ \t]+`, "g"),
];

/**
 * Files in which a bare (unquoted) value after `name =` or `name:` is code, not a literal:
 * `apiKey: options.apiKey` in TypeScript names a variable. Everywhere else (env files, YAML,
 * shell, prompts, recipes of any format) a bare value is the value itself.
 */
export const CODE_EXTENSIONS = new Set([
  "ts",
  "tsx",
  "mts",
  "cts",
  "js",
  "jsx",
  "mjs",
  "cjs",
  "json",
  "jsonc",
  "py",
  "go",
  "rs",
  "rb",
  "java",
  "kt",
  "swift",
  "php",
  "cs",
  "c",
  "h",
  "cpp",
  "sql",
  "html",
  "css",
]);

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
/** A reference to the value, not the value: `$X`, `${X}`, `%X%`, `process.env.X`, `env(X)`. */
const REFERENCE = /^[$%]|process\.env|Deno\.env|import\.meta\.env|os\.environ|getenv|\benv\(/i;
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

/** Marks a line whose match is known not to be a credential (use sparingly, and say why). */
export const ALLOW_MARKER = "scan-keys:allow";

/**
 * A value someone typed instead of a key. Each test looks at the value as a whole, never at a
 * stray substring: a real key is random, and may contain any short word or run by chance.
 */
export function isPlaceholder(value: string): boolean {
  if (TEMPLATE_MARKS.test(value) || REFERENCE.test(value) || INTERPOLATION.test(value)) return true;
  const words = value.toLowerCase().split(/[-_./:]+/).filter((word) => word !== "");
  if (words.length === 0) return true;
  if (words.some((word) => PLACEHOLDER_WORDS.has(word) || /^(x{3,}|\*+)$/.test(word))) {
    return true;
  }
  if (PLACEHOLDER_SUFFIXES.some((suffix) => words[words.length - 1].endsWith(suffix))) return true;
  // What follows a provider prefix (sk-, sk-live-, AKIA…): one character repeated, or typed runs.
  const body = value.replace(/^(?:[A-Za-z]{1,8}[-_])+/, "");
  return /^(.)\1*$/s.test(body) || sequentialShare(body) >= 0.8;
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

export function distinctCharacters(value: string): number {
  return new Set(value).size;
}

/** Looks like a credential rather than a word, a path, a number or a reference. */
export function looksLikeSecret(value: string): boolean {
  return value.length >= 8 && value.length <= 4096 && !/\s/.test(value) &&
    /[0-9]/.test(value) && /[A-Za-z]/.test(value) && distinctCharacters(value) >= 6 &&
    !isPlaceholder(value) && !/^[a-z]+:\/\//i.test(value) && !/^[0-9.:-]+$/.test(value);
}

/** The leading characters (at most 4, at most a quarter of the value) and the length. */
export function maskSecret(value: string): string {
  const chars = Array.from(value);
  const shown = Math.min(4, Math.floor(chars.length / 4));
  return `${chars.slice(0, shown).join("")}…(${chars.length} chars)`;
}

export function extensionOf(file: string): string {
  const name = file.slice(file.lastIndexOf("/") + 1).toLowerCase();
  const dot = name.lastIndexOf(".");
  return dot > 0 ? name.slice(dot + 1) : "";
}
