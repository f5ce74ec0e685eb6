/**
 * A results file (bench/results/latest.json's shape) for the report's tests: a test machine and
 * the rows each test asks for.
 */
import type { Results } from "../../bench/results.ts";
import type { Spread } from "../../bench/support.ts";

type RouteRow = Results["routes"][number];

/** A figure with its spread over the runs (the median alone when min and max are not given). */
export const spread = (median: number, min = median, max = median): Spread => [median, min, max];

/** GET /api/secrets on `engine` with the ratios given (floors at 1 ms), and no errors unless given. */
export function listRow(
  engine: string,
  ratioAt1: Spread,
  ratioLoaded: Spread,
  fields: Partial<RouteRow> = {},
): RouteRow {
  return {
    engine,
    route: "list",
    at1: { route: spread(ratioAt1[0]), floor: spread(1), ratio: ratioAt1 },
    loaded: { route: spread(ratioLoaded[0]), floor: spread(1), ratio: ratioLoaded },
    errors: 0,
    floorErrors: 0,
    proofsRanOut: 0,
    ...fields,
  };
}

export function benchResults(routes: RouteRow[], fields: Partial<Results> = {}): Results {
  return {
    meta: {
      date: "2026-01-02T03:04:05.000Z",
      commit: "abc1234",
      machine: "Test CPU, 2 cores, linux, Deno 2.9.6",
      postgres: "15.20",
      loadAverage: { start: [0.5, 0.4, 0.3], end: [1, 0.8, 0.5] },
      runs: 3,
      concurrency: 8,
      durationMs: 3000,
      singleMs: 1500,
      growthMs: 2000,
      seconds: 900,
      engines: [
        { name: "postgres", targeted: true },
        { name: "pglite", targeted: false },
      ],
      skipped: [],
    },
    routes,
    coldStart: null,
    growth: [],
    ...fields,
  };
}
