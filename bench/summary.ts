/**
 * What one bench run records (its rows, cold starts and growth), and the summary over the runs:
 * each figure's median with its min–max.
 */

export interface Row {
  /** Stable across runs: `<engine>/<measure key>`. */
  id: string;
  engine: string;
  measure: string;
  concurrency: number;
  requests: number;
  errors: number;
  p50Ms: number;
  p99Ms: number;
  rps: number;
  baseline: string | null;
  baselineP50Ms: number | null;
  /** p50 / baseline p50, both from this run. */
  ratio: number | null;
  /** The same at concurrency 1: unqueued latency, and its ratio to the floor at concurrency 1. */
  p50At1Ms?: number;
  ratioAt1?: number;
  /** CPU the server process spent per request at the fixed concurrency (robust to a busy machine). */
  cpuUsPerRequest?: number | null;
  /** A route's row: the errors of the floor it is set against (at 1 and loaded). */
  floorErrors?: number;
  /** wallet-proof: its prepared proofs ran out before the measuring time was up. */
  proofsRanOut?: boolean;
}

export interface ColdStart {
  engine: string;
  function: string;
  firstResponseMs: number;
  importMs: number | null;
  overImportMs: number | null;
}

export interface Growth {
  engine: string;
  creators: number;
  measure: string;
  p50Ms: number;
  p99Ms: number;
  rps: number;
  errors: number;
  /** wallet-proof: its prepared proofs ran out before the measuring time was up. */
  proofsRanOut?: boolean;
}

export interface RunResult {
  run: number;
  rows: Row[];
  coldStart: ColdStart[];
  growth: Growth[];
}

export const median = (xs: readonly number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

interface Spread {
  median: number;
  min: number;
  max: number;
}

function spread(values: readonly (number | null | undefined)[]): Spread | null {
  const present = values.filter((v): v is number => typeof v === "number" && !Number.isNaN(v));
  if (present.length === 0) return null;
  return { median: median(present), min: Math.min(...present), max: Math.max(...present) };
}

export function summarize(runs: readonly RunResult[]) {
  const rowIds = [...new Set(runs.flatMap((r) => r.rows.map((row) => row.id)))];
  const rows = rowIds.map((id) => {
    const each = runs.flatMap((r) => r.rows.filter((row) => row.id === id));
    const first = each[0];
    return {
      id,
      engine: first.engine,
      measure: first.measure,
      concurrency: first.concurrency,
      baseline: first.baseline,
      runs: each.length,
      requests: each.reduce((n, row) => n + row.requests, 0),
      errors: each.reduce((n, row) => n + row.errors, 0),
      floorErrors: each.reduce((n, row) => n + (row.floorErrors ?? 0), 0),
      // In how many runs.
      proofsRanOut: each.filter((row) => row.proofsRanOut).length,
      p50Ms: spread(each.map((row) => row.p50Ms)),
      p99Ms: spread(each.map((row) => row.p99Ms)),
      rps: spread(each.map((row) => row.rps)),
      cpuUsPerRequest: spread(each.map((row) => row.cpuUsPerRequest)),
      baselineP50Ms: spread(each.map((row) => row.baselineP50Ms)),
      ratio: spread(each.map((row) => row.ratio)),
      p50At1Ms: spread(each.map((row) => row.p50At1Ms)),
      ratioAt1: spread(each.map((row) => row.ratioAt1)),
    };
  });
  const coldKeys = [
    ...new Set(runs.flatMap((r) => r.coldStart.map((c) => `${c.engine}|${c.function}`))),
  ];
  const coldStart = coldKeys.map((key) => {
    const each = runs.flatMap((r) =>
      r.coldStart.filter((c) => `${c.engine}|${c.function}` === key)
    );
    return {
      engine: each[0].engine,
      function: each[0].function,
      firstResponseMs: spread(each.map((c) => c.firstResponseMs)),
      importMs: spread(each.map((c) => c.importMs)),
      overImportMs: spread(each.map((c) => c.overImportMs)),
    };
  });
  const growthKeys = [
    ...new Set(runs.flatMap((r) => r.growth.map((g) => `${g.engine}|${g.creators}|${g.measure}`))),
  ];
  const growth = growthKeys.map((key) => {
    const each = runs.flatMap((r) =>
      r.growth.filter((g) => `${g.engine}|${g.creators}|${g.measure}` === key)
    );
    return {
      engine: each[0].engine,
      creators: each[0].creators,
      measure: each[0].measure,
      p50Ms: spread(each.map((g) => g.p50Ms)),
      p99Ms: spread(each.map((g) => g.p99Ms)),
      errors: each.reduce((n, g) => n + g.errors, 0),
      proofsRanOut: each.filter((g) => g.proofsRanOut).length,
    };
  });
  return { rows, coldStart, growth };
}
