/**
 * Scanning text for credentials (key-rules.ts): line by line in pieces of any size, each line as
 * written, with its escapes read, and in the base64 and hex it holds (key-decode.ts); and bytes as
 * UTF-8, UTF-16 (by byte-order mark, NULs in alternating bytes, or its bytes' pattern) or Latin-1,
 * binary left unread.
 */
import { encodedRuns } from "./key-decode.ts";
import {
  ALLOW_MARKER,
  ASSIGNMENTS,
  BEARER,
  BEARER_KIND,
  blankEncodings,
  CODE_EXTENSIONS,
  decodeEncodings,
  extensionOf,
  type Finding,
  isCredentialName,
  isPlaceholder,
  looksLikeSecret,
  looksRandom,
  maskSecret,
  rememberValue,
  SHAPES,
  URL_CREDENTIALS,
  URL_PASSWORD_KIND,
  URL_TOKEN_KIND,
  VALUE_AT,
} from "./key-rules.ts";

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

  /**
   * Reports what is found whose anchor (where it starts, or for a key inside base64 or hex, where
   * that encoded run starts) lies in [#lead, end), where end leaves the overlap to the next
   * segment; one finding per stretch of the line.
   */
  #scan(line: string, complete: boolean): void {
    if (line.includes(ALLOW_MARKER)) return;
    const limit = complete ? line.length : line.length - this.#overlapChars;
    const candidates: Candidate[] = [];
    findInLine(line, this.#bareIsLiteral, 0, (start, end, value, kind, anchor) => {
      if (anchor >= this.#lead && anchor < limit) {
        candidates.push({ start, end, value, kind, rank: rankOf(kind) });
      }
    });
    if (candidates.length === 0) return;
    for (const { start, value, kind } of oneFindingPerStretch(candidates)) {
      const finding: Finding = {
        file: this.#file,
        line: this.#line,
        column: this.#dropped + start + 1,
        kind,
        masked: maskSecret(value),
        ...(this.#source === undefined ? {} : { source: this.#source }),
      };
      rememberValue(finding, value);
      this.findings.push(finding);
    }
  }
}

/**
 * One finding per stretch of the line, in order of where they start: a provider's shape over a
 * bearer token or a URL's credential over a value assigned to a name (a key under OPENAI_API_KEY is
 * an OpenAI key, base64-encoded or not). Rank by rank, each rank's candidates are swept in order
 * against the kept ones (disjoint, so sorted by start and by end alike): a line holding thousands
 * of keys is read in time proportional to their number, not its square.
 */
function oneFindingPerStretch(candidates: Candidate[]): Candidate[] {
  candidates.sort((a, b) => a.rank - b.rank || a.start - b.start);
  let kept: Candidate[] = [];
  for (let from = 0; from < candidates.length;) {
    let to = from;
    while (to < candidates.length && candidates[to].rank === candidates[from].rank) to++;
    const added: Candidate[] = [];
    let k = 0;
    for (let i = from; i < to; i++) {
      const candidate = candidates[i];
      while (k < kept.length && kept[k].end <= candidate.start) k++;
      if (k < kept.length && kept[k].start < candidate.end) continue;
      const last = added[added.length - 1];
      if (last !== undefined && last.end > candidate.start) continue;
      added.push(candidate);
    }
    kept = mergeByStart(kept, added);
    from = to;
  }
  return kept;
}

function mergeByStart(a: Candidate[], b: Candidate[]): Candidate[] {
  if (b.length === 0) return a;
  const merged: Candidate[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && a[i].start <= b[j].start)) merged.push(a[i++]);
    else merged.push(b[j++]);
  }
  return merged;
}

interface Candidate {
  readonly start: number;
  readonly end: number;
  readonly value: string;
  readonly kind: string;
  readonly rank: number;
}

/** A provider's shape first, then a bearer token or a URL's credential, then a named value. */
function rankOf(kind: string): number {
  if (kind.startsWith("value assigned to ")) return 2;
  const general = [BEARER_KIND, URL_PASSWORD_KIND, URL_TOKEN_KIND];
  return general.some((prefix) => kind.startsWith(prefix)) ? 1 : 0;
}

/**
 * Where something was found, in the coordinates of the text searched: `start` and `end` bound it,
 * `anchor` is where what holds it starts (itself, or the encoded run it was decoded from).
 */
type Sink = (start: number, end: number, value: string, kind: string, anchor: number) => void;

/** How deep base64 or hex inside base64 or hex is decoded: a line, and two layers below it. */
const MAX_DECODING_DEPTH = 2;

/**
 * Everything in one line: as written (escapes blanked, columns the line's), as read (escapes and
 * percent-encodings decoded to their characters), and in the base64 and hex runs it holds, decoded
 * when they decode to text.
 */
function findInLine(line: string, bareIsLiteral: boolean, depth: number, sink: Sink): void {
  findIn(
    blankEncodings(line),
    bareIsLiteral,
    (start, end, value, kind) => sink(start, end, value, kind, start),
  );
  const decoded = decodeEncodings(line);
  const text = decoded?.text ?? line;
  const at = decoded === null ? (i: number) => i : (i: number) => decoded.origin[i];
  if (decoded !== null) {
    findIn(
      text,
      bareIsLiteral,
      (start, end, value, kind) => sink(at(start), at(end), value, kind, at(start)),
    );
  }
  if (depth >= MAX_DECODING_DEPTH) return;
  for (const run of encodedRuns(text)) {
    const inner = run.text;
    let offset = 0;
    for (const innerLine of inner.split("\n")) {
      const base = offset;
      findInLine(innerLine, true, depth + 1, (start, end, value, kind) => {
        const [from, to] = run.span(utf8Length(inner, base + start), utf8Length(inner, base + end));
        sink(at(from), at(to), value, `${kind}, ${run.encoding}-encoded`, at(run.start));
      });
      offset += innerLine.length + 1;
    }
  }
}

/** The shapes, bearer tokens, credentials in URLs and values assigned to credential names. */
function findIn(
  text: string,
  bareIsLiteral: boolean,
  report: (start: number, end: number, value: string, kind: string) => void,
): void {
  for (const rule of SHAPES) {
    if (!rule.hints.some((hint) => text.includes(hint))) continue;
    for (const match of text.matchAll(rule.pattern)) {
      const value = match[0];
      if (rule.random && !looksRandom(value.slice(match[1].length))) continue;
      if (isPlaceholder(value.replace(/^-----BEGIN/, ""))) continue;
      report(match.index, match.index + value.length, value, rule.kind);
    }
  }

  for (const match of text.matchAll(BEARER)) {
    const value = match[1];
    if (!looksLikeSecret(value) || !looksRandom(value)) continue;
    const start = match.index + match[0].length - value.length;
    report(start, start + value.length, value, BEARER_KIND);
  }

  if (text.includes("://")) {
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

  for (const pattern of ASSIGNMENTS) {
    pattern.lastIndex = 0;
    for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
      const name = match[2];
      if (!isCredentialName(name)) continue;
      const start = match.index + match[0].length;
      VALUE_AT.lastIndex = start;
      const given = VALUE_AT.exec(text);
      if (given === null) continue;
      // A credential's value is its own: the search goes on after it. Other names' values are
      // searched (an assignment within them), so each character is read about once.
      pattern.lastIndex = start + given[0].length;
      const quoted = given[1] ?? given[2] ?? given[3];
      if (quoted === undefined && !bareIsLiteral) continue;
      // Trimmed: an escape at either end of a quoted value (`"<key>\n"`) was blanked to spaces.
      const raw = quoted ?? given[4];
      const value = raw.trim();
      if (!looksLikeSecret(value)) continue;
      const end = start + given[0].length - (quoted === undefined ? 0 : 1);
      const at = end - raw.trimStart().length;
      report(at, at + value.length, value, `value assigned to ${name}`);
    }
  }
}

/** The UTF-8 length of `text`'s first `chars` characters. */
function utf8Length(text: string, chars: number): number {
  let bytes = 0;
  for (let i = 0; i < chars; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < chars) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** Every finding in one file's text. */
export function scanText(text: string, file: string): Finding[] {
  const scanner = new LineScanner(file);
  scanner.push(text);
  return scanner.end();
}

export type TextEncodingName = "utf-8" | "utf-16le" | "utf-16be" | "windows-1252";

/** How much of the start decides between text and binary. */
export const SNIFF_BYTES = 8192;

/**
 * How formats that are never text start: images, archives, compressed streams, executables,
 * WebAssembly, databases. Such a file is binary whatever its other bytes look like.
 */
const BINARY_SIGNATURES: ReadonlyArray<readonly number[]> = [
  [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], // PNG
  [0xff, 0xd8, 0xff], // JPEG
  [0x47, 0x49, 0x46, 0x38], // GIF8
  [0x00, 0x61, 0x73, 0x6d], // WebAssembly
  [0x7f, 0x45, 0x4c, 0x46], // ELF
  [0x50, 0x4b, 0x03, 0x04], // zip (and jar, docx, …)
  [0x1f, 0x8b], // gzip
  [0x28, 0xb5, 0x2f, 0xfd], // zstd
  [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00], // xz
  [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c], // 7z
  [0xca, 0xfe, 0xba, 0xbe], // Java class, Mach-O universal
  [0xcf, 0xfa, 0xed, 0xfe], // Mach-O
  [0x53, 0x51, 0x4c, 0x69, 0x74, 0x65, 0x20, 0x66], // "SQLite f"
  [0x52, 0x49, 0x46, 0x46], // RIFF (WAV, WebP, AVI)
  [0x4f, 0x67, 0x67, 0x53], // Ogg
  [0x1a, 0x45, 0xdf, 0xa3], // Matroska, WebM
];

function hasBinarySignature(head: Uint8Array): boolean {
  const mp4 = head[4] === 0x66 && head[5] === 0x74 && head[6] === 0x79 && head[7] === 0x70;
  return mp4 || BINARY_SIGNATURES.some((sig) => sig.every((byte, i) => head[i] === byte));
}

/**
 * The encoding of text that starts with `head`, or "binary". A byte-order mark decides, then a
 * binary format's signature. Otherwise, in order: NULs in every other byte mean UTF-16 (PowerShell's
 * `>` and Set-Content write UTF-16LE .env files), if the start decodes as text; text that decodes
 * as UTF-8 is UTF-8 (a stray NUL or two included); UTF-16 without NULs (CJK or kana text, whose
 * characters have no zero byte) shows in its bytes' pattern (utf16ByPattern); then 8-bit text
 * (Latin-1, Windows-1252: mostly ASCII, few control characters, a NUL allowed). A start without a
 * NUL that is none of these is read as UTF-8 all the same; with a NUL, it is binary.
 */
export function sniffEncoding(head: Uint8Array): TextEncodingName | "binary" {
  if (head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf) return "utf-8";
  if (head[0] === 0xff && head[1] === 0xfe) return "utf-16le";
  if (head[0] === 0xfe && head[1] === 0xff) return "utf-16be";
  if (hasBinarySignature(head)) return "binary";
  const hasNul = head.includes(0);
  if (hasNul) {
    const order = utf16ByNuls(head);
    if (order !== null && isMostlyText(decodeStrictly(evenPart(head), order))) return order;
  }
  if (isMostlyText(decodeStrictly(head, "utf-8"))) return "utf-8";
  // 8-bit text with its spaces and line breaks comes first: repeated lines of an even length
  // can make its bytes look patterned, and UTF-16 CJK or kana text has almost no such bytes.
  const latin1 = isLatin1Text(head);
  if (latin1 && whitespaceShare(head) >= 0.01) return "windows-1252";
  const order = utf16ByPattern(head);
  if (order !== null) return order;
  if (latin1) return "windows-1252";
  return hasNul ? "binary" : "utf-8";
}

/** The share of bytes that are ASCII spaces, tabs or line breaks. */
function whitespaceShare(head: Uint8Array): number {
  let count = 0;
  for (const byte of head) if (byte === 0x20 || byte === 9 || byte === 10 || byte === 13) count++;
  return count / Math.max(1, head.length);
}

const evenPart = (head: Uint8Array) => head.subarray(0, head.length & ~1);

/** ASCII in UTF-16LE is "k\0e\0y\0": NULs at odd offsets, almost none at even ones. */
function utf16ByNuls(head: Uint8Array): "utf-16le" | "utf-16be" | null {
  const pairs = head.length >> 1;
  let evenNuls = 0;
  let oddNuls = 0;
  for (let i = 0; i < pairs * 2; i += 2) {
    if (head[i] === 0) evenNuls++;
    if (head[i + 1] === 0) oddNuls++;
  }
  if (oddNuls >= pairs * 0.1 && evenNuls * 8 <= oddNuls) return "utf-16le";
  if (evenNuls >= pairs * 0.1 && oddNuls * 8 <= evenNuls) return "utf-16be";
  return null;
}

/**
 * UTF-16 told by its pattern rather than its NULs: in 8-bit text the bytes at even and at odd
 * offsets follow the same distribution, in UTF-16 they do not (the high byte of CJK text is one
 * of a few dozen values, its low byte any of 256). Far apart (a total variation distance of at
 * least one half; text in one byte per character stays under about 0.4 over 512 bytes or more),
 * the side with fewer distinct values is the high byte, and the start must then decode as text.
 */
function utf16ByPattern(head: Uint8Array): "utf-16le" | "utf-16be" | null {
  const pairs = head.length >> 1;
  if (pairs < 256) return null;
  const even = new Uint32Array(256);
  const odd = new Uint32Array(256);
  for (let i = 0; i < pairs * 2; i += 2) {
    even[head[i]]++;
    odd[head[i + 1]]++;
  }
  let distance = 0;
  let evenDistinct = 0;
  let oddDistinct = 0;
  for (let b = 0; b < 256; b++) {
    distance += Math.abs(even[b] - odd[b]);
    if (even[b] > 0) evenDistinct++;
    if (odd[b] > 0) oddDistinct++;
  }
  if (distance / 2 / pairs < 0.5) return null;
  const order = oddDistinct < evenDistinct ? "utf-16le" : "utf-16be";
  return isMostlyText(decodeStrictly(evenPart(head), order)) ? order : null;
}

/**
 * 8-bit text: at least 70 % printable ASCII or white space, and at most one character in a
 * hundred a control character (NUL included) or a byte Windows-1252 leaves undefined. Random or
 * compressed bytes are about 40 % printable ASCII.
 */
function isLatin1Text(head: Uint8Array): boolean {
  let ascii = 0;
  let controls = 0;
  for (const byte of head) {
    if ((byte >= 0x20 && byte < 0x7f) || byte === 9 || byte === 10 || byte === 12 || byte === 13) {
      ascii++;
    } else if (
      byte < 0x20 && byte !== 27 || byte === 0x7f || byte === 0x81 || byte === 0x8d ||
      byte === 0x8f || byte === 0x90 || byte === 0x9d
    ) {
      controls++;
    }
  }
  return ascii >= head.length * 0.7 && controls <= Math.max(1, head.length * 0.01);
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
