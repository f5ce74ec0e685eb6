/**
 * Scanning text line by line, pushed in pieces of any size: one finding per stretch of a line,
 * the strongest evidence kept.
 */
import { ALLOW_MARKER } from "./allow.ts";
import { bareValueIsLiteral } from "./assignments.ts";
import { type Finding, maskSecret, rememberValue } from "./finding.ts";
import type { LongRun } from "./decode.ts";
import { DumpReader, parseDumpLine } from "./dumps.ts";
import { findInLine } from "./line-search.ts";
import { type Candidate, oneFindingPerStretch } from "./stretches.ts";
import { firstNonBlank, sectionHeader } from "./sections.ts";

/**
 * Scans text pushed in pieces of any size, line by line. A line longer than `segmentChars` (a
 * minified file, a dump on one line) is scanned in overlapping segments: each segment reports
 * only what starts in its own part, and the next one starts `overlapChars` before that part ends
 * (plus `contextChars` already seen, for what must precede a match), so a key lying across a cut
 * is found once, whole.
 */
export class LineScanner {
  readonly findings: Finding[] = [];
  /** Base64 and hex runs too long to decode: not read, so the report must name them. */
  readonly longRuns: LongRunAt[] = [];
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
  /** The line being scanned: where its reported part ends, whether it is whole, its length. */
  #limit = 0;
  #complete = true;
  #length = 0;
  /** What the line being scanned holds, reused line after line. */
  readonly #candidates: Candidate[] = [];
  readonly #collect = (
    start: number,
    end: number,
    value: string,
    kind: string,
    anchor: number,
    rank: number,
  ) => {
    if (this.#inReach(anchor)) this.#candidates.push({ start, end, value, kind, rank });
  };
  readonly #tooLong = (run: LongRun) => {
    if (!this.#inReach(run.start)) return;
    const { encoding, length } = run;
    // A run reaching the end of a segment goes on in the next one.
    const cut = !this.#complete && run.start + length >= this.#length;
    this.longRuns.push({
      line: this.#line,
      column: this.#dropped + run.start + 1,
      encoding,
      length,
      cut,
    });
  };
  /** The INI section the current line is in (`[mistral]`), if any. */
  #section: string | null = null;
  /** The hex dump the lines above belong to, if any, and where findings in its lines are. */
  readonly #dump = new DumpReader((line, column, value, kind) => {
    // Found in a dump's line as written too: the longer reading holds the whole value (a line
    // of hex can hold a key's start, the dump all of it).
    const seen = this.#inDump.get(`${line}:${column}`);
    if (seen === undefined) this.#report(line, column, value, kind);
    else if (value.length > seen.length) {
      this.findings[seen.index] = this.#finding(line, column, value, kind);
    }
  });
  /** Findings in the open dump's lines as written, by `line:column`. */
  readonly #inDump = new Map<string, { index: number; length: number }>();

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
    this.#bareIsLiteral = bareValueIsLiteral(file);
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
    this.#endDump();
    // A dump's findings are known when it ends, after those of its own lines.
    return this.findings.sort((a, b) => a.line - b.line || a.column - b.column);
  }

  #inReach(anchor: number): boolean {
    return anchor >= this.#lead && anchor < this.#limit;
  }

  #endDump(): void {
    if (!this.#dump.open) return;
    this.#dump.end();
    this.#inDump.clear();
  }

  #report(line: number, column: number, value: string, kind: string): void {
    if (this.#dump.open) {
      this.#inDump.set(`${line}:${column}`, { index: this.findings.length, length: value.length });
    }
    this.findings.push(this.#finding(line, column, value, kind));
  }

  #finding(line: number, column: number, value: string, kind: string): Finding {
    const finding: Finding = {
      file: this.#file,
      line,
      column,
      kind,
      masked: maskSecret(value),
      ...(this.#source === undefined ? {} : { source: this.#source }),
    };
    rememberValue(finding, value);
    return finding;
  }

  /**
   * Reports what is found whose anchor (where it starts, or for a key inside base64 or hex, where
   * that encoded run starts) lies in [#lead, end), where end leaves the overlap to the next
   * segment; one finding per stretch of the line.
   */
  #scan(text: string, complete: boolean): void {
    let line = text;
    // A line read whole, not a segment of a long one: only such a line is a dump's or a header.
    const wholeLine = complete && this.#dropped === 0;
    const allowed = line.includes(ALLOW_MARKER);
    const indent = wholeLine ? firstNonBlank(line) : 0;
    // A marked line is skipped as a whole, its part of a dump too.
    const dump = wholeLine && !allowed ? parseDumpLine(line, this.#dump.open, indent) : null;
    if (dump === null) {
      this.#endDump();
    } else {
      this.#dump.add(this.#line, dump);
      // xxd's or hexdump's text column shows the dump's bytes, read with the rest of the dump.
      if (dump.textColumn !== undefined) line = line.slice(0, dump.textColumn);
    }
    if (wholeLine) this.#section = sectionHeader(line, indent) ?? this.#section;
    if (allowed) return;
    this.#limit = complete ? line.length : line.length - this.#overlapChars;
    this.#complete = complete;
    this.#length = line.length;
    const candidates = this.#candidates;
    candidates.length = 0;
    findInLine(line, {
      bareIsLiteral: this.#bareIsLiteral,
      section: this.#section,
      tooLong: this.#tooLong,
    }, this.#collect);
    if (candidates.length === 0) return;
    for (const { start, value, kind } of oneFindingPerStretch(candidates)) {
      this.#report(this.#line, this.#dropped + start + 1, value, kind);
    }
  }
}

/** A base64 or hex run not decoded for its length, where it starts. */
export interface LongRunAt {
  readonly line: number;
  readonly column: number;
  readonly encoding: string;
  /** Its length, or (when `cut`) what the segment held of it. */
  readonly length: number;
  readonly cut: boolean;
}
