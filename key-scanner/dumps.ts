/**
 * Hex dumps, whose bytes run on over lines: `xxd` (`-g1`, `-p` too), `hexdump -C`, hex bytes
 * separated by spaces (`4f 50 45 …`) and byte lists in code (`0x4f, 0x50, …`, as `xxd -i` writes
 * them). Consecutive dump lines are read as one stream of bytes, so a key written across them is
 * found, at the line and column of its first byte.
 */
import { findInLine } from "./line-search.ts";
import { firstNonBlank } from "./sections.ts";
import { type Candidate, oneFindingPerStretch } from "./stretches.ts";

/** The bytes one line of a dump holds. */
export interface DumpLine {
  readonly bytes: readonly number[];
  /** Where each byte's digits start in the line (0-based). */
  readonly columns: readonly number[];
  /**
   * Where xxd's or hexdump's text column starts, when it shows exactly these bytes: read with the
   * stream, not again as a line (it would show a key cut at the line's end).
   */
  readonly textColumn?: number;
}

/** `00000010: 6b2d 7072 …  k-pr…`: an offset, groups of bytes, then the text column. */
const XXD = /^([0-9a-f]{6,16}: )((?:[0-9a-f]{2})+(?: (?:[0-9a-f]{2})+)*)(?: {2}|$)/i;
/** `00000010  6b 2d 70 72 …  |k-pr…|` */
const HEXDUMP = /^([0-9a-f]{6,16} {1,2})((?:[0-9a-f]{2} {1,2})*[0-9a-f]{2})(?: {2}|\s*$)/i;
/** `0x4f, 0x50, …`: C, Rust, Python, Go, Java byte lists. */
const BYTE_LIST = /(?<![0-9A-Za-z_])0[xX][0-9a-fA-F]{1,2}(?:[ \t]*,[ \t]*0[xX][0-9a-fA-F]{1,2})*/g;
/** `4f 50 45 4e …`: eight bytes or more to start a dump, any number to go on with one. */
const SPACED_BYTES = /(?<![0-9A-Za-z])[0-9A-Fa-f]{2}(?: [0-9A-Fa-f]{2}){7,}(?![0-9A-Za-z])/g;
/** A cheap test a line must pass before SPACED_BYTES looks for where such a run starts. */
const SPACED_HINT = /[0-9A-Fa-f]{2} [0-9A-Fa-f]{2} [0-9A-Fa-f]{2} [0-9A-Fa-f]{2} /;
const MORE_SPACED_BYTES = /(?<![0-9A-Za-z])[0-9A-Fa-f]{2}(?: [0-9A-Fa-f]{2})*(?![0-9A-Za-z])/g;
/** A line of hex alone, as `xxd -p` writes 30 bytes a line. */
const PLAIN_HEX = /^[ \t]*((?:[0-9A-Fa-f]{2})+)[ \t]*$/;
/** What else a continuation line of a byte list holds: brackets, separators, white space. */
const ONLY_PUNCTUATION = /^[\s{}[\]();,]*$/;

/** Fewest bytes a line must hold to start a dump (any once one has started). */
const MIN_LIST_BYTES = 4;
const MIN_SPACED_BYTES = 8;
const MIN_PLAIN_HEX_BYTES = 16;

/**
 * The bytes `line` holds as a line of a hex dump; `open`: whether a dump goes on from above;
 * `indent`: where its first character other than a space or a tab is (firstNonBlank).
 */
export function parseDumpLine(
  line: string,
  open: boolean,
  indent = firstNonBlank(line),
): DumpLine | null {
  // Every form but a byte list starts with a hex digit, after white space at most.
  const first = line.charCodeAt(indent);
  const hexFirst = (first >= 48 && first <= 57) || ((first | 32) >= 97 && (first | 32) <= 102);
  const framed = hexFirst ? XXD.exec(line) ?? HEXDUMP.exec(line) : null;
  if (framed !== null) {
    const [, offset, hex] = framed;
    const dump = hexBytes(hex, offset.length);
    return { ...dump, textColumn: textColumnOf(line, offset.length + hex.length, dump.bytes) };
  }
  if (line.includes("0x") || line.includes("0X")) {
    const list = listed(line, BYTE_LIST, MIN_LIST_BYTES, open);
    if (list !== null) return list;
  }
  const plain = hexFirst ? PLAIN_HEX.exec(line) : null;
  if (plain !== null && (open || plain[1].length >= MIN_PLAIN_HEX_BYTES * 2)) {
    return hexBytes(plain[1], line.indexOf(plain[1]));
  }
  if (open) return listed(line, MORE_SPACED_BYTES, MIN_SPACED_BYTES, open);
  if (line.length >= 23 && SPACED_HINT.test(line)) {
    return listed(line, SPACED_BYTES, MIN_SPACED_BYTES, open);
  }
  return null;
}

/**
 * Where the line's last characters show `bytes` as xxd (`  text`) or hexdump (`  |text|`) show
 * them, after the hex ending at `hexEnd`; undefined when they do not.
 */
function textColumnOf(line: string, hexEnd: number, bytes: readonly number[]): number | undefined {
  const barred = line.endsWith("|");
  const start = line.length - bytes.length - (barred ? 1 : 0);
  const gutter = barred ? start - 1 : start;
  if (gutter < hexEnd + 2 || line.slice(hexEnd, gutter).trim() !== "") return undefined;
  if (barred && line[gutter] !== "|") return undefined;
  return shows(line.slice(start, start + bytes.length), bytes) ? gutter : undefined;
}

/**
 * The first run of `pattern` with `min` bytes or more; once a dump is open, a shorter one alone
 * on its line (its last line).
 */
function listed(line: string, pattern: RegExp, min: number, open: boolean): DumpLine | null {
  // exec, not matchAll: matchAll copies the expression, on every line.
  pattern.lastIndex = 0;
  for (let match = pattern.exec(line); match !== null; match = pattern.exec(line)) {
    const bytes: number[] = [];
    const columns: number[] = [];
    for (const token of match[0].matchAll(/(?:0[xX])?([0-9A-Fa-f]{1,2})/g)) {
      bytes.push(parseInt(token[1], 16));
      columns.push(match.index + token.index);
    }
    if (bytes.length >= min) return { bytes, columns };
    if (!open) continue;
    const rest = line.slice(0, match.index) + line.slice(match.index + match[0].length);
    if (ONLY_PUNCTUATION.test(rest)) return { bytes, columns };
  }
  return null;
}

/** Bytes from hex digits in pairs, spaces between groups skipped. */
function hexBytes(hex: string, at: number): DumpLine {
  const bytes: number[] = [];
  const columns: number[] = [];
  for (let i = 0; i + 1 < hex.length; i++) {
    if (hex[i] === " ") continue;
    bytes.push(parseInt(hex.slice(i, i + 2), 16));
    columns.push(at + i);
    i++;
  }
  return { bytes, columns };
}

/** Whether `text` is how xxd and hexdump show `bytes`: printable ASCII as is, others as ".". */
function shows(text: string, bytes: readonly number[]): boolean {
  if (text.length !== bytes.length) return false;
  for (let i = 0; i < bytes.length; i++) {
    const printable = bytes[i] >= 0x20 && bytes[i] < 0x7f;
    if (text.charCodeAt(i) !== (printable ? bytes[i] : 0x2e)) return false;
  }
  return true;
}

/** A finding in a dump: where its first byte is written. */
export type DumpReport = (line: number, column: number, value: string, kind: string) => void;

/**
 * Most bytes held before the dump so far is read; its last OVERLAP bytes are read again with the
 * rest (a key across the cut found once), after CONTEXT bytes kept for what precedes a value.
 */
const MAX_HELD = 1 << 16;
const OVERLAP = 8192;
const CONTEXT = 1024;

/** Consecutive dump lines, read as one stream of bytes when the dump ends. */
export class DumpReader {
  readonly #report: DumpReport;
  #bytes: number[] = [];
  #lines: number[] = [];
  #columns: number[] = [];
  /** Leading bytes already read, kept only as context. */
  #lead = 0;

  constructor(report: DumpReport) {
    this.#report = report;
  }

  get open(): boolean {
    return this.#bytes.length > 0;
  }

  add(line: number, dump: DumpLine): void {
    for (let i = 0; i < dump.bytes.length; i++) {
      this.#bytes.push(dump.bytes[i]);
      this.#lines.push(line);
      this.#columns.push(dump.columns[i]);
    }
    if (this.#bytes.length > MAX_HELD) {
      this.#read(this.#bytes.length - OVERLAP);
      const keep = this.#bytes.length - OVERLAP - CONTEXT;
      this.#bytes = this.#bytes.slice(keep);
      this.#lines = this.#lines.slice(keep);
      this.#columns = this.#columns.slice(keep);
      this.#lead = CONTEXT;
    }
  }

  /** The dump has ended: reads what is held. */
  end(): void {
    if (!this.open) return;
    this.#read(this.#bytes.length);
    this.#bytes = [];
    this.#lines = [];
    this.#columns = [];
    this.#lead = 0;
  }

  /**
   * Reads the held bytes as text, stretch by stretch between bytes that are not printable ASCII
   * or white space (keys are ASCII), reporting what starts in [#lead, limit).
   */
  #read(limit: number): void {
    const bytes = this.#bytes;
    let from = 0;
    for (let i = 0; i <= bytes.length; i++) {
      if (i < bytes.length && isTextByte(bytes[i])) continue;
      if (i - from >= 8) this.#readStretch(from, i, limit);
      from = i + 1;
    }
  }

  #readStretch(from: number, to: number, limit: number): void {
    let text = "";
    for (let i = from; i < to; i++) text += String.fromCharCode(this.#bytes[i]);
    let offset = from;
    for (const line of text.split("\n")) {
      const base = offset;
      const candidates: Candidate[] = [];
      findInLine(line, { bareIsLiteral: true }, (start, end, value, kind, _anchor, rank) => {
        if (base + start >= this.#lead && base + start < limit) {
          candidates.push({ start, end, value, kind, rank });
        }
      });
      for (const { start, value, kind } of oneFindingPerStretch(candidates)) {
        const at = base + start;
        this.#report(this.#lines[at], this.#columns[at] + 1, value, `${kind}, in a hex dump`);
      }
      offset += line.length + 1;
    }
  }
}

const isTextByte = (byte: number) =>
  (byte >= 0x20 && byte < 0x7f) || byte === 9 || byte === 10 || byte === 13;
