/**
 * Finds provider credentials committed to files (spec part 1: keys never belong in recipe files,
 * prompt files or committed environment files; a key found there is compromised and must be
 * rotated). Two kinds of evidence:
 *
 * - a value shaped like a well-known provider key (`sk-…`, `AKIA…`, `ghp_…`, …) anywhere, and
 * - a literal assigned to a credential name: one of the vault's seven secret types, or a name
 *   ending in API_KEY, SECRET_KEY, ACCESS_KEY, API_TOKEN or AUTH_TOKEN (any case, `apiKey` too).
 *
 * Placeholders (`sk-...`, `<your key>`, `${OPENAI_API_KEY}`, `xxxx`, `your_api_key_here`) are
 * not findings. A finding carries the value masked, never whole: the report must not become a
 * second leak.
 *
 * Text is read in pieces (any size), as UTF-8 or UTF-16 (by its byte-order mark, or by NULs in
 * alternating bytes); a file is skipped as binary only when its first 8 KB are not text. Besides
 * files, it reads git's staged blobs and, on request, every blob in the history of HEAD.
 */
import { SECRET_TYPES } from "../functions/_shared/secret-types.ts";
import { type BlobRef, historyBlobs, indexEntries, readBlobs, stagedChanges } from "./git-blobs.ts";

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

/**
 * Characters no key alphabet has (keys are base62, base64, hex, with `-` or `_`): a value holding
 * one of these is a template or an elision, wherever it appears.
 */
const TEMPLATE_MARKS = /[<>…]|\.\.\.|\*\*\*|\{\{|\}\}|\$\{|\$\(/;
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
  if (TEMPLATE_MARKS.test(value) || REFERENCE.test(value)) return true;
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

/**
 * Scans text pushed in pieces of any size, line by line. A line longer than `segmentChars` (a
 * minified file, a dump on one line) is scanned in overlapping segments: each segment reports
 * only what starts in its own part, and the next one starts `overlapChars` before that part ends
 * (plus `contextChars` already seen, for what must precede a match), so a key lying across a cut
 * is found once, whole.
 */
export class LineScanner {
  readonly findings: Finding[] = [];
  readonly #file: string;
  readonly #source: string | undefined;
  readonly #bareIsLiteral: boolean;
  readonly #segmentChars: number;
  readonly #overlapChars: number;
  readonly #contextChars: number;
  #pending = "";
  #line = 1;
  /** Characters of the current line dropped before #pending. */
  #dropped = 0;
  /** Leading characters of #pending already scanned, kept only as context. */
  #lead = 0;

  constructor(
    file: string,
    options: {
      source?: string;
      segmentChars?: number;
      overlapChars?: number;
      contextChars?: number;
    } = {},
  ) {
    this.#file = file;
    this.#source = options.source;
    this.#bareIsLiteral = !CODE_EXTENSIONS.has(extensionOf(file));
    this.#segmentChars = options.segmentChars ?? 1 << 20;
    // Longer than any value looksLikeSecret accepts (4096), and than any key shape.
    this.#overlapChars = options.overlapChars ?? 8192;
    this.#contextChars = options.contextChars ?? 1024;
    if (this.#segmentChars <= this.#overlapChars + this.#contextChars) {
      throw new RangeError("segmentChars must exceed overlapChars + contextChars");
    }
  }

  push(text: string): void {
    this.#pending += text;
    let from = 0;
    for (;;) {
      const newline = this.#pending.indexOf("\n", from);
      if (newline < 0) break;
      this.#scan(this.#pending.slice(from, newline), true);
      this.#line++;
      this.#dropped = 0;
      this.#lead = 0;
      from = newline + 1;
    }
    if (from > 0) this.#pending = this.#pending.slice(from);
    while (this.#pending.length > this.#segmentChars) {
      this.#scan(this.#pending, false);
      const keep = this.#pending.length - this.#overlapChars - this.#contextChars;
      this.#pending = this.#pending.slice(keep);
      this.#dropped += keep;
      this.#lead = this.#contextChars;
    }
  }

  /** The end of the text: scans the last line. */
  end(): Finding[] {
    this.#scan(this.#pending, true);
    this.#pending = "";
    return this.findings;
  }

  /** Reports matches starting in [#lead, end), where end leaves the overlap to the next segment. */
  #scan(line: string, complete: boolean): void {
    if (line.includes(ALLOW_MARKER)) return;
    const limit = complete ? line.length : line.length - this.#overlapChars;
    const spans: Array<[number, number]> = [];
    const add = (start: number, value: string, kind: string) => {
      if (start < this.#lead || start >= limit) return;
      const end = start + value.length;
      if (spans.some(([s, e]) => start < e && s < end)) return; // one finding per value
      spans.push([start, end]);
      this.findings.push({
        file: this.#file,
        line: this.#line,
        column: this.#dropped + start + 1,
        kind,
        masked: maskSecret(value),
        ...(this.#source === undefined ? {} : { source: this.#source }),
      });
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
      if (quoted === undefined && !this.#bareIsLiteral) continue;
      const value = quoted ?? match[6];
      if (!looksLikeSecret(value)) continue;
      const start = match.index + match[0].length - value.length - (quoted === undefined ? 0 : 1);
      add(start, value, `value assigned to ${name}`);
    }
  }
}

/** Every finding in one file's text. */
export function scanText(text: string, file: string): Finding[] {
  const scanner = new LineScanner(file);
  scanner.push(text);
  return scanner.end();
}

export type TextEncodingName = "utf-8" | "utf-16le" | "utf-16be";

/** How much of the start decides between text and binary. */
export const SNIFF_BYTES = 8192;

/**
 * The encoding of text that starts with `head`, or "binary". A byte-order mark decides; else text
 * without NUL bytes is UTF-8 (as before); else NULs in every other byte mean UTF-16 (PowerShell's
 * `>` and Set-Content write UTF-16LE .env files), if the start then decodes as text; else UTF-8
 * with a stray NUL is still text when it decodes cleanly and is mostly printable.
 */
export function sniffEncoding(head: Uint8Array): TextEncodingName | "binary" {
  if (head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf) return "utf-8";
  if (head[0] === 0xff && head[1] === 0xfe) return "utf-16le";
  if (head[0] === 0xfe && head[1] === 0xff) return "utf-16be";
  if (!head.includes(0)) return "utf-8";
  const pairs = head.length >> 1;
  let evenNuls = 0;
  let oddNuls = 0;
  for (let i = 0; i < pairs * 2; i += 2) {
    if (head[i] === 0) evenNuls++;
    if (head[i + 1] === 0) oddNuls++;
  }
  // ASCII in UTF-16LE is "k\0e\0y\0": NULs at odd offsets, almost none at even ones.
  const order = oddNuls >= pairs * 0.1 && evenNuls * 8 <= oddNuls
    ? "utf-16le"
    : evenNuls >= pairs * 0.1 && oddNuls * 8 <= evenNuls
    ? "utf-16be"
    : null;
  if (order !== null && isMostlyText(decodeStrictly(head.subarray(0, pairs * 2), order))) {
    return order;
  }
  return isMostlyText(decodeStrictly(head, "utf-8")) ? "utf-8" : "binary";
}

function decodeStrictly(bytes: Uint8Array, encoding: TextEncodingName): string | null {
  try {
    // stream: the sample may end inside a character.
    return new TextDecoder(encoding, { fatal: true }).decode(bytes, { stream: true });
  } catch {
    return null;
  }
}

/** At most one character in ten is a control character (tab, newlines, form feed, ESC aside). */
function isMostlyText(text: string | null): boolean {
  if (text === null) return false;
  let controls = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if ((code < 0x20 && !(code >= 9 && code <= 13) && code !== 27) || code === 0x7f) controls++;
  }
  return controls * 10 <= text.length;
}

/**
 * Scans a byte stream of any length: the first SNIFF_BYTES decide the encoding (or "binary",
 * and the rest is not read), then it is decoded and scanned piece by piece.
 */
export async function scanBytes(
  chunks: AsyncIterable<Uint8Array>,
  file: string,
  source?: string,
): Promise<{ findings: Finding[]; binary: boolean }> {
  const iterator = chunks[Symbol.asyncIterator]();
  const head: Uint8Array[] = [];
  let headBytes = 0;
  let ended = false;
  while (headBytes < SNIFF_BYTES) {
    const next = await iterator.next();
    if (next.done) {
      ended = true;
      break;
    }
    head.push(next.value);
    headBytes += next.value.length;
  }
  const start = concat(head);
  const encoding = sniffEncoding(start.subarray(0, SNIFF_BYTES));
  if (encoding === "binary") {
    if (!ended) await iterator.return?.();
    return { findings: [], binary: true };
  }
  const decoder = new TextDecoder(encoding);
  const scanner = new LineScanner(file, { source });
  scanner.push(decoder.decode(start, { stream: true }));
  if (!ended) {
    for (;;) {
      const next = await iterator.next();
      if (next.done) break;
      scanner.push(decoder.decode(next.value, { stream: true }));
    }
  }
  scanner.push(decoder.decode());
  return { findings: scanner.end(), binary: false };
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0];
  const joined = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    joined.set(part, offset);
    offset += part.length;
  }
  return joined;
}

export interface ScanReport {
  readonly findings: Finding[];
  /** Files of the working copy (or given paths) read as text. */
  readonly filesScanned: number;
  /** Staged blobs read (content the working copy does not show). */
  readonly stagedScanned: number;
  /** Blobs from the history of HEAD read (--history). */
  readonly historyScanned: number;
  /** Files not read, with why (binary, a link out of the tree, deleted, …). */
  readonly skipped: ReadonlyArray<{ readonly file: string; readonly reason: string }>;
}

const SKIPPED_DIRECTORIES = new Set([".git", "node_modules"]);

const within = (path: string, root: string) => path === root || path.startsWith(`${root}/`);

/**
 * Scans files and, recursively, directories (without .git and node_modules), in pieces whatever
 * their size. Symbolic links met on the way are followed when they lead to a file or directory
 * inside the directory being walked (each real file is read once), and reported as skipped when
 * they lead out of it; a path given as an argument is read wherever it leads.
 */
export async function scanPaths(paths: readonly string[]): Promise<ScanReport> {
  const scan = new PathScan();
  for (const path of paths) {
    const info = await Deno.lstat(path).catch(() => null);
    if (info === null) throw new Deno.errors.NotFound(`No such file or directory: ${path}`);
    await scan.path(path, null);
  }
  return scan.report();
}

/** Scanning state shared by a run: what was read (by real path), found and skipped. */
class PathScan {
  readonly findings: Finding[] = [];
  readonly skipped: Array<{ file: string; reason: string }> = [];
  readonly #seen = new Set<string>();
  filesScanned = 0;

  /** Counts `real` as read already: a link to it is not followed. */
  markSeen(real: string): void {
    this.#seen.add(real);
  }

  /**
   * `tree`: the real path of the directory a link must stay inside (null: a path given by the
   * caller, followed wherever it leads).
   */
  async path(path: string, tree: string | null): Promise<void> {
    const info = await Deno.lstat(path);
    let real = path;
    if (info.isSymlink) {
      try {
        real = await Deno.realPath(path);
      } catch {
        this.skipped.push({ file: path, reason: "broken link" });
        return;
      }
      if (tree !== null && !within(real, tree)) {
        this.skipped.push({ file: path, reason: "link to outside the tree, not followed" });
        return;
      }
    } else {
      real = await Deno.realPath(path);
    }
    if (this.#seen.has(real)) return; // already read through another path (or a link cycle)
    this.#seen.add(real);
    const target = info.isSymlink ? await Deno.stat(real) : info;
    if (target.isDirectory) {
      const entries: string[] = [];
      for await (const entry of Deno.readDir(path)) {
        if (!(entry.isDirectory && SKIPPED_DIRECTORIES.has(entry.name))) entries.push(entry.name);
      }
      const inside = tree ?? real;
      for (const name of entries.sort()) {
        await this.path(`${path.replace(/\/+$/, "")}/${name}`, inside);
      }
    } else if (target.isFile) {
      await this.file(path);
    }
  }

  async file(path: string): Promise<void> {
    const file = await Deno.open(path);
    // The stream closes the file when read to the end or cancelled.
    const { findings, binary } = await scanBytes(file.readable, path);
    if (binary) {
      this.skipped.push({ file: path, reason: "binary" });
      return;
    }
    this.filesScanned++;
    this.findings.push(...findings);
  }

  report(extra: { stagedScanned?: number; historyScanned?: number } = {}): ScanReport {
    return {
      findings: this.findings,
      filesScanned: this.filesScanned,
      stagedScanned: extra.stagedScanned ?? 0,
      historyScanned: extra.historyScanned ?? 0,
      skipped: this.skipped,
    };
  }
}

/**
 * The project as git sees it, from `root` (a git working tree); paths in the report are relative
 * to it. Reads:
 *
 * - the working copy's tracked files and new files that are not ignored; links are followed
 *   inside `root` only, and a tracked file deleted from the working copy is skipped (its staged
 *   content is read instead);
 * - staged content that differs from the working copy (findings marked "staged");
 * - with `history`, every blob reachable from HEAD that is not in the index, each finding marked
 *   with a commit that holds it.
 */
export async function scanProject(
  root: string,
  options: { history?: boolean } = {},
): Promise<ScanReport> {
  const realRoot = await Deno.realPath(root);
  const scan = new PathScan();
  // The project is read file by file below; a link back to its root must not walk it again.
  scan.markSeen(realRoot);
  const files = await projectFiles(root);
  // Plain files first, so a file also reachable through a link is reported under its own name.
  const links: string[] = [];
  for (const file of files) {
    const info = await Deno.lstat(`${root}/${file}`).catch(() => null);
    if (info === null) {
      scan.skipped.push({ file, reason: "deleted in the working copy" });
    } else if (info.isSymlink) {
      links.push(file);
    } else {
      await scan.path(`${root}/${file}`, realRoot);
    }
  }
  for (const link of links) await scan.path(`${root}/${link}`, realRoot);
  const relative = (path: string) =>
    path.startsWith(`${root}/`) ? path.slice(root.length + 1) : path;
  for (const finding of scan.findings.splice(0)) {
    scan.findings.push({ ...finding, file: relative(finding.file) });
  }
  for (const skip of scan.skipped) skip.file = relative(skip.file);

  const staged = await stagedChanges(root);
  const stagedScanned = await scanBlobs(root, staged, () => "staged", scan);

  let historyScanned = 0;
  if (options.history) {
    const inIndex = new Set((await indexEntries(root)).map((entry) => entry.sha));
    const past = (await historyBlobs(root)).filter((blob) => !inIndex.has(blob.sha));
    historyScanned = await scanBlobs(root, past, (ref) => `commit ${ref.commit}`, scan);
  }
  return scan.report({ stagedScanned, historyScanned });
}

async function scanBlobs(
  root: string,
  refs: readonly BlobRef[],
  sourceOf: (ref: BlobRef) => string,
  scan: PathScan,
): Promise<number> {
  let scanned = 0;
  for await (const blob of readBlobs(root, refs)) {
    const source = sourceOf(blob.ref);
    const { findings, binary } = await scanBytes(blob.chunks, blob.ref.path, source);
    if (binary) continue;
    scanned++;
    scan.findings.push(...findings);
  }
  return scanned;
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
  const where = `${finding.file}:${finding.line}:${finding.column}`;
  const source = finding.source === undefined ? "" : ` (${finding.source})`;
  return `${where}: ${finding.kind}: ${finding.masked}${source}`;
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
