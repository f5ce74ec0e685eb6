/**
 * Scanning text line by line, pushed in pieces of any size: one finding per stretch of a line,
 * the strongest evidence kept.
 */
import { ALLOW_MARKER } from "./key-allow.ts";
import { bareValueIsLiteral } from "./key-assignments.ts";
import { type Finding, maskSecret, rememberValue } from "./key-finding.ts";
import { findInLine } from "./key-line-search.ts";
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
    findInLine(line, this.#bareIsLiteral, (start, end, value, kind, anchor, rank) => {
      if (anchor >= this.#lead && anchor < limit) {
        candidates.push({ start, end, value, kind, rank });
      }
    }, this.#section);
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
  /** Lower is stronger evidence (see Sink in key-line-search.ts). */
  readonly rank: number;
}
