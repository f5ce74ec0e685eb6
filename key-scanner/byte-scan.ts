/** A file's or blob's bytes, scanned as the text they hold. */
import { MAX_RUN } from "./decode.ts";
import type { Finding } from "./finding.ts";
import { LineScanner, type LongRunAt } from "./line-scanner.ts";
import { SNIFF_BYTES, sniffEncoding } from "./text-encoding.ts";

/**
 * Scans a byte stream of any length: the first SNIFF_BYTES decide the encoding (or "binary",
 * and the rest is not read), then it is decoded and scanned piece by piece.
 */
export async function scanBytes(
  chunks: AsyncIterable<Uint8Array>,
  file: string,
  source?: string,
): Promise<{ findings: Finding[]; binary: boolean; longRuns: LongRunAt[] }> {
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
    return { findings: [], binary: true, longRuns: [] };
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
  return { findings: scanner.end(), binary: false, longRuns: scanner.longRuns };
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

/** Why a run was not read, as the report names it. */
export function longRunReason(run: LongRunAt): string {
  const length = `${run.length}${run.cut ? " or more" : ""}`;
  return `a ${run.encoding} run of ${length} characters at line ${run.line}, column ` +
    `${run.column}, longer than the ${MAX_RUN} the scanner decodes: not decoded`;
}
