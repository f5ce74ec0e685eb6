/**
 * Every credential in one line, at each layer it may be written in: as written (escapes
 * blanked), as read (escapes and percent-encodings decoded), and inside the base64 and hex runs it
 * holds, found in the line's own coordinates.
 */
import { findAssignments } from "./key-assignments.ts";
import { findAuthorizationTokens, findBearerTokens, findUrlCredentials } from "./key-bearer-url.ts";
import { findCallValues } from "./key-calls.ts";
import { encodedRuns } from "./key-decode.ts";
import { blankEncodings, decodeEncodings } from "./key-escapes.ts";
import type { Report } from "./key-finding.ts";
import { findLiveRunCredentials } from "./key-live-run.ts";
import { sectionHeader } from "./key-sections.ts";
import { findShapes } from "./key-shapes.ts";

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

/**
 * Everything in `line`; `bareIsLiteral`: whether an unquoted value after a name is a literal;
 * `section`: the INI section the line is in (sectionHeader), if any.
 */
export function findInLine(
  line: string,
  bareIsLiteral: boolean,
  sink: Sink,
  section: string | null = null,
): void {
  searchLayers(line, bareIsLiteral, section, 0, sink);
}

function searchLayers(
  line: string,
  bareIsLiteral: boolean,
  section: string | null,
  depth: number,
  sink: Sink,
): void {
  findIn(
    blankEncodings(line),
    bareIsLiteral,
    section,
    (start, end, value, kind, rank) => sink(start, end, value, kind, start, rank),
  );
  const decoded = decodeEncodings(line);
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
  for (const run of encodedRuns(text)) {
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
          const [from, to] = run.span(
            utf8Length(inner, base + start),
            utf8Length(inner, base + end),
          );
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
