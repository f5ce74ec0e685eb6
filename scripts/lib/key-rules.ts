/**
 * What a committed provider credential looks like: the key shapes providers document, bearer
 * tokens and passwords in URLs, the names whose value is a credential, and what is only a
 * placeholder; how escapes and percent-encodings read. A finding shows the value masked, and its
 * fingerprint (a slow hash of the value, for the allow-list).
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
  /** The git blob id of the content it is in, when known (the allow-list matches it). */
  readonly blob?: string;
  /** A slow hash of the value (fingerprintOf), once the report is made. */
  readonly fingerprint?: string;
}

/**
 * Each finding's value, for its fingerprint only: kept out of the object, so that printing or
 * logging a finding can never show it.
 */
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

interface ShapeRule {
  readonly kind: string;
  /** Texts a match starts with: a line holding none is not searched (most lines hold none). */
  readonly hints: readonly string[];
  /** Group 1: the provider's prefix; what follows it in the match is the random body. */
  readonly pattern: RegExp;
  /** The body must look random (looksRandom): a key's does, a word's or a name's does not. */
  readonly random: boolean;
}

// Each pattern: not glued to a preceding letter or digit, and (for open-ended lengths) greedy to
// the end of the token. Prefixes are the providers' documented ones, bodies their alphabets (and
// no narrower: Hugging Face's are letters only, a Google key may have no digit).
export const SHAPES: readonly ShapeRule[] = [
  shape("Anthropic-style key (sk-ant-…)", "sk-ant-", "[A-Za-z0-9_-]{20,}"),
  shape("OpenAI-style key (sk-…)", "sk-(?!ant-)", "[A-Za-z0-9_-]{20,}", { hints: ["sk-"] }),
  shape("Stripe-style key (sk_live_…)", "[rs]k_(?:live|test)_", "[A-Za-z0-9]{20,}", {
    hints: ["k_live_", "k_test_"],
  }),
  shape("AWS access key id (AKIA…)", "AKIA|ASIA", "[A-Z0-9]{16}(?![A-Za-z0-9])", {
    hints: ["AKIA", "ASIA"],
    random: false,
  }),
  shape("GitHub token (ghp_…)", "gh[pousr]_", "[A-Za-z0-9]{36,}", {
    hints: ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
  }),
  shape("GitHub token (github_pat_…)", "github_pat_", "[A-Za-z0-9_]{40,}"),
  shape("Slack token (xox…)", "xox[abposr]-", "[A-Za-z0-9-]{10,}", { hints: ["xox"] }),
  shape(
    "Slack webhook URL",
    String.raw`https://hooks\.slack\.com/services/`,
    "T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]{16,}",
    { hints: ["hooks.slack.com/services/"] },
  ),
  shape("Google API key (AIza…)", "AIza", "[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])"),
  shape("Hugging Face token (hf_…)", "hf_", "[A-Za-z0-9]{30,}"),
  shape("Hugging Face organisation token (api_org_…)", "api_org_", "[A-Za-z0-9]{30,}"),
  shape("Replicate token (r8_…)", "r8_", "[A-Za-z0-9]{30,}"),
  shape("Groq key (gsk_…)", "gsk_", "[A-Za-z0-9]{40,}"),
  shape("xAI key (xai-…)", "xai-", "[A-Za-z0-9]{40,}"),
  shape("Perplexity key (pplx-…)", "pplx-", "[A-Za-z0-9]{40,}"),
  shape("npm token (npm_…)", "npm_", "[A-Za-z0-9]{36,}"),
  shape("GitLab token (glpat-…)", "glpat-", "[A-Za-z0-9_-]{20,}"),
  shape("Grafana token (glc_…, glsa_…)", "glc_|glsa_", "[A-Za-z0-9+/_]{32,}={0,2}", {
    hints: ["glc_", "glsa_"],
  }),
  shape("Linear key (lin_api_…)", "lin_api_", "[A-Za-z0-9_]{32,}"),
  shape("Notion token (ntn_…)", "ntn_", "[0-9]{11}[A-Za-z0-9]{35,}"),
  shape(
    "SendGrid key (SG.…)",
    String.raw`SG\.`,
    String.raw`[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}`,
    { hints: ["SG."] },
  ),
  shape("Shopify token (shpat_…)", "shp(?:at|ca|pa|ss)_", "[A-Fa-f0-9]{32,}", {
    hints: ["shpat_", "shpca_", "shppa_", "shpss_"],
  }),
  shape("HashiCorp Vault token (hvs.…)", String.raw`hv[sbr]\.`, "[A-Za-z0-9_-]{90,}", {
    hints: ["hvs.", "hvb.", "hvr."],
  }),
  shape("Vercel token (vcp_…)", "vc[pciark]_", "[A-Za-z0-9]{20,}", {
    hints: ["vcp_", "vci_", "vca_", "vcr_", "vck_"],
  }),
  shape("Databricks token (dapi…)", "dapi", "[a-fA-F0-9]{32}(?:-[0-9])?(?![A-Za-z0-9])"),
  shape("Figma token (figd_…)", "figd_", "[A-Za-z0-9_-]{40,}"),
  shape("Tailscale key (tskey-…)", "tskey-[a-z]+-", "[A-Za-z0-9_]{8,}-[A-Za-z0-9_]{16,}", {
    hints: ["tskey-"],
  }),
  shape("Docker token (dckr_pat_…)", "dckr_pat_", "[A-Za-z0-9_-]{27,}"),
  shape(
    "Cloudflare token (cfut_…)",
    "cfk_|cfut_|cfat_",
    "[A-Za-z0-9]{40}[0-9a-f]{8}(?![A-Za-z0-9])",
    { hints: ["cfk_", "cfut_", "cfat_"] },
  ),
  shape("1Password service account token (ops_…)", "ops_", "eyJ[A-Za-z0-9+/=]{100,}"),
  shape("private key block", "-----BEGIN ", "(?:[A-Z]+ )*PRIVATE KEY-----", { random: false }),
];

/**
 * `prefix` is a regular expression, a literal unless `hints` lists the literal texts it can start
 * with; `random`: whether the body must look random (looksRandom).
 */
function shape(
  kind: string,
  prefix: string,
  body: string,
  options: { hints?: readonly string[]; random?: boolean } = {},
): ShapeRule {
  const pattern = new RegExp(`(?<![A-Za-z0-9])(${prefix})${body}`, "g");
  return { kind, hints: options.hints ?? [prefix], pattern, random: options.random ?? true };
}

/**
 * `Authorization: Bearer <token>` in a header, a curl line or code; group 1 is the token. Found
 * when it is long (32 or more characters) and random (looksLikeSecret).
 */
export const BEARER = /(?<![A-Za-z0-9_])[Bb](?:earer|EARER)[ \t]+([A-Za-z0-9._~+/-]{32,}=*)/g;
export const BEARER_KIND = "bearer token (Authorization: Bearer …)";

/**
 * Credentials in a URL, `scheme://user:password@host` (a database URL, a registry, basic auth);
 * group 1 is the user, group 2 the password. Found when the password looks like a secret
 * (looksLikeSecret, or 8 or more random-looking letters), or, for GitHub's
 * `https://<token>:x-oauth-basic@github.com/`, the user does.
 * The scheme never starts inside a word, so a long run of letters is read once.
 */
export const URL_CREDENTIALS =
  /(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*:\/\/([^\s:@\/?#"'`<>]{1,256}):([^\s@\/?#"'`<>]{1,256})@(?=[A-Za-z0-9[])/g;
export const URL_PASSWORD_KIND = "password in a URL (scheme://user:…@host)";
export const URL_TOKEN_KIND = "token in a URL (https://…:x-oauth-basic@)";

/**
 * Whether a key's body looks random rather than like a word, a name or a typed run: eight or more
 * distinct characters, and letters mixed with digits, or both cases mixed, or 16 digits or more. A
 * random body of 20 or more characters from the alphabets above (hex from 32) fails this less than
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

/** Names whose value is a credential, compared lower-cased without `_` and `-`. */
const CREDENTIAL_NAMES = new Set(SECRET_TYPES.map(normalizeName));
const CREDENTIAL_SUFFIXES = ["apikey", "secretkey", "accesskey", "apitoken", "authtoken"];

/**
 * Providers whose keys go by names like `MISTRAL_KEY` or `AZURE_OPENAI_KEY` (many have no prefix of
 * their own to recognise the key by): a name holding one of these as a word, or starting with one,
 * and ending in KEY, TOKEN, SECRET or PAT names a credential.
 */
const PROVIDER_WORDS = new Set([
  "ai21",
  "anthropic",
  "anyscale",
  "assemblyai",
  "azure",
  "baseten",
  "bfl",
  "cerebras",
  "claude",
  "cohere",
  "dashscope",
  "deepgram",
  "deepinfra",
  "deepseek",
  "elevenlabs",
  "fal",
  "fireworks",
  "gemini",
  "google",
  "grok",
  "groq",
  "hf",
  "huggingface",
  "hyperbolic",
  "ideogram",
  "jina",
  "kimi",
  "leonardo",
  "luma",
  "minimax",
  "mistral",
  "moonshot",
  "novita",
  "nvidia",
  "openai",
  "openrouter",
  "perplexity",
  "pinecone",
  "pplx",
  "qwen",
  "replicate",
  "runway",
  "runwayml",
  "sambanova",
  "stability",
  "suno",
  "together",
  "togetherai",
  "vertex",
  "voyage",
  "xai",
  "zhipu",
]);
/** Provider names long enough to count at the start of a name run together (`openaikey`). */
const PROVIDER_STEMS = [...PROVIDER_WORDS].filter((word) => word.length >= 5);
const CREDENTIAL_LAST_WORDS = new Set(["key", "token", "secret", "pat", "apikey"]);

function normalizeName(name: string): string {
  return name.toLowerCase().replace(/[_-]/g, "");
}

/** `AZURE_OPENAI_KEY`, `hfToken`, `mistral-key-2` → lower-case words, numbers dropped at the end. */
function nameWords(name: string): string[] {
  const words = name.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase().split(/[^a-z0-9]+/)
    .filter((word) => word !== "");
  while (words.length > 0 && /^[0-9]+$/.test(words[words.length - 1])) words.pop();
  if (words.length > 0) words[words.length - 1] = words[words.length - 1].replace(/[0-9]+$/, "");
  return words;
}

/** Names seen, and whether each is a credential's: the same few names recur on every line. */
const credentialNameCache = new Map<string, boolean>();

export function isCredentialName(name: string): boolean {
  let known = credentialNameCache.get(name);
  if (known === undefined) {
    known = decideCredentialName(name);
    if (credentialNameCache.size >= 10_000) credentialNameCache.clear();
    credentialNameCache.set(name, known);
  }
  return known;
}

function decideCredentialName(name: string): boolean {
  const normalized = normalizeName(name);
  if (
    CREDENTIAL_NAMES.has(normalized) ||
    CREDENTIAL_SUFFIXES.some((suffix) => normalized.endsWith(suffix))
  ) {
    return true;
  }
  if (!/(?:key|token|secret|pat)[0-9]*$/.test(normalized)) return false;
  const words = nameWords(name);
  if (words.length < 2 || !CREDENTIAL_LAST_WORDS.has(words[words.length - 1])) return false;
  const joined = words.join("");
  return words.some((word) => PROVIDER_WORDS.has(word)) ||
    PROVIDER_STEMS.some((stem) => joined.startsWith(stem));
}

/**
 * Characters written as an escape (`\n`, `\"`, `\u0022`, `\u{22}`, `\x22` in JSON strings,
 * notebooks, HAR files, source code) or percent-encoded (`%3D`, `%20` in URLs). Percent-encodings
 * count when ASCII or a whole UTF-8 character (`%E2%80%9C`), never a lone `%DE…`, which is how
 * `%DEV_KEY%` (a Windows variable reference, not a value) starts.
 */
const ENCODED =
  String.raw`\\(?:[nrtbf"'\\/]|u[0-9a-fA-F]{4}|u\{[0-9a-fA-F]{1,6}\}|x[0-9a-fA-F]{2})` +
  String.raw`|%[0-7][0-9A-Fa-f]|%[C-Fc-f][0-9A-Fa-f](?:%[89ABab][0-9A-Fa-f]){1,3}`;
const ENCODED_CHARACTER = new RegExp(ENCODED, "g");
const HAS_ENCODED_CHARACTER = new RegExp(ENCODED);

/** An escaped double quote, as JSON writes one inside a string (`\"`, `\u0022`). */
const ESCAPED_QUOTE = /^\\(?:"|u0022)$/i;
/** What may follow a closing quote: the end, space, or what separates or closes a value. */
const AFTER_CLOSING_QUOTE = /^(?:$|[\s:,;=}\]\\)])/;

/**
 * The text with each escape and percent-encoding overwritten by spaces of the same length: the
 * last character of an encoding (the `n` of `\n`, the `D` of `%3D`) is a letter or digit that
 * would otherwise glue to a key written right after it, and columns stay those of the text. An
 * escaped double quote stays a quote, next to what it quotes (last when it opens, first when it
 * closes), so JSON held in a JSON string (`"{\"API_KEY\": \"…\"}"`) still quotes its values: a
 * quoted value is a literal even in code. decodeEncodings reads the same text the other way.
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

const SIMPLE_ESCAPES: Record<string, string> = {
  n: "\n",
  r: "\r",
  t: "\t",
  b: "\b",
  f: "\f",
};
const utf8 = new TextDecoder("utf-8", { fatal: true });

/** What one escape or percent-encoding stands for; null when it stands for no character. */
function decodeOne(encoded: string): string | null {
  if (encoded[0] === "%") {
    if (encoded.length === 3) return String.fromCharCode(parseInt(encoded.slice(1), 16));
    const bytes = Uint8Array.from(encoded.slice(1).split("%"), (hex) => parseInt(hex, 16));
    try {
      return utf8.decode(bytes);
    } catch {
      return null;
    }
  }
  const kind = encoded[1];
  if (kind === "x") return String.fromCharCode(parseInt(encoded.slice(2), 16));
  if (kind === "u") {
    const code = parseInt(encoded.replace(/^\\u\{?|\}$/g, ""), 16);
    return code <= 0x10ffff ? String.fromCodePoint(code) : null;
  }
  return SIMPLE_ESCAPES[kind] ?? kind;
}

/**
 * The text with its escapes and percent-encodings read as the characters they stand for (a key
 * written `\u0073\u006b…` or `sk%2Dproj%2D…` reads whole), or null when it has none. `origin[i]`
 * is where the i-th character came from in `text` (`origin[decoded.length]` is its end).
 */
export function decodeEncodings(text: string): { text: string; origin: Int32Array } | null {
  if (!HAS_ENCODED_CHARACTER.test(text)) return null;
  const parts: string[] = [];
  const origins: number[] = [];
  let from = 0;
  const copy = (end: number) => {
    parts.push(text.slice(from, end));
    for (let i = from; i < end; i++) origins.push(i);
  };
  for (const match of text.matchAll(ENCODED_CHARACTER)) {
    const decoded = decodeOne(match[0]);
    if (decoded === null) continue;
    copy(match.index);
    parts.push(decoded);
    for (let i = 0; i < decoded.length; i++) origins.push(match.index);
    from = match.index + match[0].length;
  }
  copy(text.length);
  origins.push(text.length);
  return { text: parts.join(""), origin: Int32Array.from(origins) };
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
 * - A name (optionally quoted, optionally after `export`, `.`, `[` or `--` as in
 *   `client.api_key`, `process.env.X`, `os.environ["X"]`, `--api-key`, optionally then `]`), then
 *   `=` or `:` (not `==`, `=>`, `::`). A name never starts inside a word (after a letter and
 *   dashes), which keeps a long `a-b-c-…` or `--a--a…` linear. An escaped `[\"X\"]` is matched blanked, as
 *   `[ "X" ]`.
 * - Dockerfile's older `ENV NAME value`, without `=`.
 */
export const ASSIGNMENTS: readonly RegExp[] = [
  new RegExp(
    String.raw`(?<![A-Za-z0-9_$])(?<![A-Za-z0-9_]-+)(["']?)([A-Za-z_][A-Za-z0-9_-]*)\1` +
      String.raw`(?:[ \t]*\])?[ \t]*` +
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

/** Marks a line whose match is known not to be a credential (use sparingly, and say why). */
export const ALLOW_MARKER = "scan-keys:allow";

/**
 * A value someone typed instead of a key. Each test looks at the value as a whole, never at a
 * stray substring: a real key is random, and may contain any short word or run by chance. A
 * placeholder word counts only in a value without a long random part: a random key in base64url
 * splits at its `-` and `_` into parts, and one of them may be "here" or "xxx" by chance.
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

export function distinctCharacters(value: string): number {
  return new Set(value).size;
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
