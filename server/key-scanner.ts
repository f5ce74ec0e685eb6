/**
 * Finds provider credentials committed to files (spec part 1: keys never belong in recipe files,
 * prompt files or committed environment files; a key found there is compromised and must be
 * rotated). Two kinds of evidence:
 *
 * - a value shaped like a well-known provider key (`sk-…`, `AKIA…`, `ghp_…`, …) anywhere, and
 * - a literal assigned to a credential name: one of the vault's seven secret types, or a name
 *   ending in API_KEY, SECRET_KEY, ACCESS_KEY, API_TOKEN or AUTH_TOKEN (any case, `apiKey` too).
 *
 * Placeholders (`sk-...`, `<your key>`, `${OPENAI_API_KEY}`, `xxxx`, `changeme`) are not findings.
 * A finding carries the value masked, never whole: the report must not become a second leak.
 */
import { SECRET_TYPES } from "../functions/_shared/secret-types.ts";

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
}

interface ShapeRule {
  readonly kind: string;
  readonly pattern: RegExp;
  /** Random keys of this shape virtually always contain a digit; a digitless match is prose. */
  readonly needsDigit: boolean;
}

// Each pattern: not glued to a preceding letter or digit, and (for open-ended lengths) greedy to
// the end of the token. Prefixes are the providers' documented ones.
const SHAPES: readonly ShapeRule[] = [
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
 * A name (optionally quoted, optionally after `export`), then `=` or `:` (not `==`, `=>`, `::`),
 * then the value: a quoted string or a bare token.
 */
const ASSIGNMENT =
  /(?<![A-Za-z0-9_$.])(["']?)([A-Za-z_][A-Za-z0-9_-]*)\1[ \t]*(?::(?![:=])|=(?![=>~]))[ \t]*(?:"([^"\n]*)"|'([^'\n]*)'|`([^`\n]*)`|([^\s,;#'"`)}\]]+))/g;

/**
 * Files in which a bare (unquoted) value after `name =` or `name:` is code, not a literal:
 * `apiKey: options.apiKey` in TypeScript names a variable. Everywhere else (env files, YAML,
 * shell, prompts, recipes of any format) a bare value is the value itself.
 */
const CODE_EXTENSIONS = new Set([
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

const PLACEHOLDER_WORDS =
  /your|example|placeholder|change[_-]?me|redacted|dummy|replace|insert|here|sample|xxxx|\*\*\*|\.\.\.|…|<|>|\{\{|\}\}/i;
/** A reference to the value, not the value: `$X`, `${X}`, `%X%`, `process.env.X`, `env(X)`. */
const REFERENCE = /^[$%]|process\.env|Deno\.env|import\.meta\.env|os\.environ|getenv|\benv\(/i;

/** Marks a line whose match is known not to be a credential (use sparingly, and say why). */
export const ALLOW_MARKER = "scan-keys:allow";

function isPlaceholder(value: string): boolean {
  return PLACEHOLDER_WORDS.test(value) || /^(.)\1*$/.test(value) || REFERENCE.test(value) ||
    hasSequentialRun(value, 6);
}

/**
 * "0123456789", "abcdef": how people type a fake key. Six ascending characters in a row occur in a
 * random 48-character key about once in a billion keys, so this costs no real finding.
 */
function hasSequentialRun(value: string, length: number): boolean {
  let run = 1;
  for (let i = 1; i < value.length; i++) {
    const previous = value.charCodeAt(i - 1);
    const step = value.charCodeAt(i) - previous === 1 && /[0-9a-zA-Z]/.test(value[i - 1]) &&
      /[0-9a-zA-Z]/.test(value[i]);
    run = step ? run + 1 : 1;
    if (run >= length) return true;
  }
  return false;
}

function distinctCharacters(value: string): number {
  return new Set(value).size;
}

/** Looks like a credential rather than a word, a path, a number or a reference. */
function looksLikeSecret(value: string): boolean {
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

function extensionOf(file: string): string {
  const name = file.slice(file.lastIndexOf("/") + 1).toLowerCase();
  const dot = name.lastIndexOf(".");
  return dot > 0 ? name.slice(dot + 1) : "";
}

/** Every finding in one file's text. */
export function scanText(text: string, file: string): Finding[] {
  const findings: Finding[] = [];
  const bareIsLiteral = !CODE_EXTENSIONS.has(extensionOf(file));
  const lines = text.split("\n");
  lines.forEach((line, index) => {
    if (line.includes(ALLOW_MARKER)) return;
    const spans: Array<[number, number]> = [];
    const add = (start: number, value: string, kind: string) => {
      const end = start + value.length;
      if (spans.some(([s, e]) => start < e && s < end)) return; // one finding per value
      spans.push([start, end]);
      findings.push({ file, line: index + 1, column: start + 1, kind, masked: maskSecret(value) });
    };

    for (const rule of SHAPES) {
      for (const match of line.matchAll(rule.pattern)) {
        const value = match[0];
        if (isPlaceholder(value.replace(/^-----BEGIN/, ""))) continue;
        if (rule.needsDigit && !/[0-9]/.test(value)) continue;
        if (rule.needsDigit && distinctCharacters(value) < 10) continue;
        add(match.index, value, rule.kind);
      }
    }

    for (const match of line.matchAll(ASSIGNMENT)) {
      const name = match[2];
      if (!isCredentialName(name)) continue;
      const quoted = match[3] ?? match[4] ?? match[5];
      if (quoted === undefined && !bareIsLiteral) continue;
      const value = quoted ?? match[6];
      if (!looksLikeSecret(value)) continue;
      const start = match.index + match[0].length - value.length - (quoted === undefined ? 0 : 1);
      add(start, value, `value assigned to ${name}`);
    }
  });
  return findings;
}

export interface ScanReport {
  readonly findings: Finding[];
  readonly filesScanned: number;
  /** Files not read, with why (binary, too large, gone). */
  readonly skipped: ReadonlyArray<{ readonly file: string; readonly reason: string }>;
}

export const MAX_FILE_BYTES = 5 * 1024 * 1024;
const SKIPPED_DIRECTORIES = new Set([".git", "node_modules"]);

/** Scans files and, recursively, directories (without .git and node_modules). */
export async function scanPaths(paths: readonly string[]): Promise<ScanReport> {
  const findings: Finding[] = [];
  const skipped: Array<{ file: string; reason: string }> = [];
  let filesScanned = 0;

  const scanFile = async (file: string) => {
    let bytes: Uint8Array;
    try {
      const info = await Deno.stat(file);
      if (info.size > MAX_FILE_BYTES) {
        skipped.push({ file, reason: `larger than ${MAX_FILE_BYTES} bytes` });
        return;
      }
      bytes = await Deno.readFile(file);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) {
        skipped.push({ file, reason: "not found" });
        return;
      }
      throw error;
    }
    if (bytes.subarray(0, 8000).includes(0)) {
      skipped.push({ file, reason: "binary" });
      return;
    }
    filesScanned++;
    findings.push(...scanText(new TextDecoder().decode(bytes), file));
  };

  const walk = async (path: string): Promise<void> => {
    const info = await Deno.lstat(path);
    if (info.isSymlink) return; // a link inside the tree points at something scanned, or outside
    if (!info.isDirectory) return await scanFile(path);
    const entries: string[] = [];
    for await (const entry of Deno.readDir(path)) {
      if (!(entry.isDirectory && SKIPPED_DIRECTORIES.has(entry.name))) entries.push(entry.name);
    }
    for (const name of entries.sort()) await walk(`${path.replace(/\/+$/, "")}/${name}`);
  };

  for (const path of paths) {
    const info = await Deno.lstat(path).catch(() => null);
    if (info?.isFile) await scanFile(path);
    else if (info?.isDirectory) await walk(path);
    else if (info === null) throw new Deno.errors.NotFound(`No such file or directory: ${path}`);
  }
  return { findings, filesScanned, skipped };
}

/**
 * The project's files as git sees them: tracked, plus untracked ones that are not ignored (about
 * to be committed). Paths are relative to `root`. Ignored files (.local/dev-keys.json) stay out.
 */
export async function projectFiles(root: string): Promise<string[]> {
  const result = await new Deno.Command("git", {
    args: ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
    cwd: root,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!result.success) {
    const message = new TextDecoder().decode(result.stderr).trim();
    throw new Error(`git ls-files failed in ${root}: ${message}`);
  }
  const files = new TextDecoder().decode(result.stdout).split("\0").filter((f) => f !== "");
  return [...new Set(files)].sort();
}

export function formatFinding(finding: Finding): string {
  return `${finding.file}:${finding.line}:${finding.column}: ${finding.kind}: ${finding.masked}`;
}

/** What to do about findings: the keys are compromised, whatever happens to the files now. */
export function rotationAdvice(findings: readonly Finding[]): string {
  const files = new Set(findings.map((finding) => finding.file)).size;
  return [
    `${findings.length} provider credential${findings.length === 1 ? "" : "s"} found in ${files} ` +
    `file${files === 1 ? "" : "s"}.`,
    "Treat each one as compromised: revoke it at the provider and create a new key now.",
    "Save the new key in the vault (PUT /api/secrets or the settings page), never in a recipe,",
    "prompt or environment file, and remove the old one from the file. Removing it is not enough",
    "on its own: it stays in the git history and in every clone, which is why it must be rotated.",
  ].join("\n");
}
