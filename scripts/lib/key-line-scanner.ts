/**
 * Scanning text line by line, pushed in pieces of any size: one finding per stretch of a line,
 * the strongest evidence kept.
 */
import { ALLOW_MARKER } from "./key-allow.ts";
import { bareValueIsLiteral } from "./key-assignments.ts";
import { type Finding, maskSecret, rememberValue } from "./key-finding.ts";
import type { LongRun } from "./key-decode.ts";
import { findInLine } from "./key-line-search.ts";
import { type Candidate, oneFindingPerStretch } from "./key-stretches.ts";
import { sectionHeader } from "./key-sections.ts";

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
  /** The INI section the current line is in (`[mistral]`), if any. */
  #section: string | null = null;

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
    return this.findings;
  }

  /**
   * Reports what is found whose anchor (where it starts, or for a key inside base64 or hex, where
   * that encoded run starts) lies in [#lead, end), where end leaves the overlap to the next
   * segment; one finding per stretch of the line.
   */
  #scan(line: string, complete: boolean): void {
    if (complete) this.#section = sectionHeader(line) ?? this.#section;
    if (line.includes(ALLOW_MARKER)) return;
    const limit = complete ? line.length : line.length - this.#overlapChars;
    const candidates: Candidate[] = [];
    const inReach = (anchor: number) => anchor >= this.#lead && anchor < limit;
    const context = {
      bareIsLiteral: this.#bareIsLiteral,
      section: this.#section,
      tooLong: (run: LongRun) => {
        if (!inReach(run.start)) return;
        const { encoding, length } = run;
        // A run reaching the end of a segment goes on in the next one.
        const cut = !complete && run.start + length >= line.length;
        this.longRuns.push({
          line: this.#line,
          column: this.#dropped + run.start + 1,
          encoding,
          length,
          cut,
        });
      },
    };
    findInLine(line, context, (start, end, value, kind, anchor, rank) => {
      if (inReach(anchor)) candidates.push({ start, end, value, kind, rank });
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

/** A base64 or hex run not decoded for its length, where it starts. */
export interface LongRunAt {
  readonly line: number;
  readonly column: number;
  readonly encoding: string;
  /** Its length, or (when `cut`) what the segment held of it. */
  readonly length: number;
  readonly cut: boolean;
}
