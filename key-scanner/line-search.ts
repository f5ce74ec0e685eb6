/**
 * Every credential in one line, at each layer it may be written in: as written (escapes
 * blanked), as read (escapes and percent-encodings decoded), and inside the base64 and hex runs it
 * holds, found in the line's own coordinates.
 */
import { findAssignments } from "./assignments.ts";
import { findAuthorizationTokens, findBearerTokens, findUrlCredentials } from "./bearer-url.ts";
import { findCallValues } from "./calls.ts";
import { encodedRuns, type LongRun } from "./decode.ts";
import { blankEncodings, decodeEncodings, hasEncodings } from "./escapes.ts";
import type { Report } from "./finding.ts";
import { findLiveRunCredentials } from "./live-run.ts";
import { sectionHeader } from "./sections.ts";
import { findShapes } from "./shapes.ts";

/**
 * Where something was found, in the line's coordinates: `start` and `end` bound it, `anchor` is
 * where what holds it starts (itself, or the encoded run it was decoded from). `rank` orders
 * overlapping evidence: a provider's shape (0), then a bearer token or a URL's credential (1),
 * then a value assigned to a name (2).
 */
type Sink = (
  start: number,
  end: number,
  value: string,
  kind: string,
  anchor: number,
  rank: number,
) => void;

/** How deep base64 or hex inside base64 or hex is decoded: a line, and two layers below it. */
const MAX_DECODING_DEPTH = 2;

/** How a line is read. */
export interface LineContext {
  /** Whether an unquoted value after a name is a literal (bareValueIsLiteral). */
  readonly bareIsLiteral: boolean;
  /** The INI section the line is in (sectionHeader), if any. */
  readonly section?: string | null;
  /** Told of each base64 or hex run too long to decode, at its start in the line. */
  readonly tooLong?: (run: LongRun) => void;
}

/** Everything in `line`. */
export function findInLine(line: string, context: LineContext, sink: Sink): void {
  searchLayers(line, context.bareIsLiteral, context.section ?? null, 0, sink, context.tooLong);
}

function searchLayers(
  line: string,
  bareIsLiteral: boolean,
  section: string | null,
  depth: number,
  sink: Sink,
  tooLong?: (run: LongRun) => void,
): void {
  const encoded = hasEncodings(line);
  findIn(
    encoded ? blankEncodings(line) : line,
    bareIsLiteral,
    section,
    (start, end, value, kind, rank) => sink(start, end, value, kind, start, rank),
  );
  const decoded = encoded ? decodeEncodings(line) : null;
  const text = decoded?.text ?? line;
  const at = decoded === null ? (i: number) => i : (i: number) => decoded.origin[i];
  if (decoded !== null) {
    findIn(
      text,
      bareIsLiteral,
      section,
      (start, end, value, kind, rank) => sink(at(start), at(end), value, kind, at(start), rank),
    );
  }
  if (depth >= MAX_DECODING_DEPTH) return;
  const tooLongHere = tooLong === undefined
    ? undefined
    : (run: LongRun) => tooLong({ ...run, start: at(run.start) });
  for (const run of encodedRuns(text, tooLongHere)) {
    const inner = run.text;
    let offset = 0;
    // An INI file encoded whole has its sections inside.
    let innerSection: string | null = null;
    for (const innerLine of inner.split("\n")) {
      const base = offset;
      innerSection = sectionHeader(innerLine) ?? innerSection;
      searchLayers(
        innerLine,
        true,
        innerSection,
        depth + 1,
        (start, end, value, kind, _a, rank) => {
          const [from, to] = run.span(base + start, base + end);
          sink(at(from), at(to), value, `${kind}, ${run.encoding}-encoded`, at(run.start), rank);
        },
      );
      offset += innerLine.length + 1;
    }
  }
}

/**
 * The shapes (the project's live-run credentials among them), bearer and `Authorization: Token`
 * tokens, credentials in URLs, and values given to credential names (assigned, passed to a call,
 * or as a fallback).
 */
function findIn(
  text: string,
  bareIsLiteral: boolean,
  section: string | null,
  report: (start: number, end: number, value: string, kind: string, rank: number) => void,
): void {
  const ranked = (rank: number): Report => (start, end, value, kind) =>
    report(start, end, value, kind, rank);
  findShapes(text, ranked(0));
  findLiveRunCredentials(text, ranked(0));
  findBearerTokens(text, ranked(1));
  findAuthorizationTokens(text, ranked(1));
  findUrlCredentials(text, ranked(1));
  findAssignments(text, bareIsLiteral, ranked(2), section);
  findCallValues(text, ranked(2));
}
