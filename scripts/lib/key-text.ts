/**
 * Scanning text for credentials (key-rules.ts): line by line in pieces of any size, and bytes as
 * UTF-8 or UTF-16 (by byte-order mark, or by NULs in alternating bytes), binary left unread.
 */
import {
  ALLOW_MARKER,
  ASSIGNMENTS,
  blankEncodings,
  CODE_EXTENSIONS,
  distinctCharacters,
  extensionOf,
  type Finding,
  isCredentialName,
  isPlaceholder,
  looksLikeSecret,
  maskSecret,
  SHAPES,
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

  /** Reports matches starting in [#lead, end), where end leaves the overlap to the next segment. */
  #scan(line: string, complete: boolean): void {
    if (line.includes(ALLOW_MARKER)) return;
    // Same length as the line: a match's index is its column in the line.
    const text = blankEncodings(line);
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
      for (const match of text.matchAll(rule.pattern)) {
        const value = match[0];
        if (isPlaceholder(value.replace(/^-----BEGIN/, ""))) continue;
        if (rule.needsDigit && !/[0-9]/.test(value)) continue;
        if (rule.needsDigit && distinctCharacters(value) < 10) continue;
        add(match.index, value, rule.kind);
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
        if (quoted === undefined && !this.#bareIsLiteral) continue;
        // Trimmed: an escape at either end of a quoted value (`"<key>\n"`) was blanked to spaces.
        const raw = quoted ?? given[4];
        const value = raw.trim();
        if (!looksLikeSecret(value)) continue;
        const end = start + given[0].length - (quoted === undefined ? 0 : 1);
        add(end - raw.trimStart().length, value, `value assigned to ${name}`);
      }
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
