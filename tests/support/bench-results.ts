/**
 * A results file (bench/results/latest.json's shape) for the report's tests: one Postgres engine,
 * a test machine, and the GET /api/secrets rows each test asks for.
 */
import type { LoadResult } from "../../bench/http-load.ts";
import type { Measured } from "../../bench/floors.ts";
import type { BenchResults, Spread } from "../../bench/results-types.ts";

type SummaryRow = BenchResults["summary"]["rows"][number];

/** A figure with its spread over the runs (the median alone when min and max are not given). */
export const spread = (median: number, min = median, max = median): Spread => ({
  median,
  min,
  max,
});

/** GET /api/secrets against `baseline`, with the ratios and error count given. */
export function listRow(
  fields: Pick<SummaryRow, "id" | "baseline" | "ratio" | "ratioAt1"> & { errors?: number },
): SummaryRow {
  return {
    engine: "postgres",
    measure: "GET /api/secrets (token, 7 stored)",
    concurrency: 8,
    runs: 3,
    requests: 3000,
    errors: 0,
    p50Ms: spread(2.7, 2.5, 3.1),
    p99Ms: spread(8),
    rps: spread(2600),
    cpuUsPerRequest: spread(333),
    baselineP50Ms: spread(1.27),
    p50At1Ms: spread(0.61),
    ...fields,
  };
}

export function benchResults(rows: SummaryRow[], notes: string[] = []): BenchResults {
  return {
    meta: {
      date: "2026-01-02T03:04:05.000Z",
      commit: "abc1234",
      machine: {
        cpuModel: "Test CPU",
        cores: 2,
        memoryGiB: 24,
        os: "linux x86_64",
        deno: "2.9.6",
        v8: "15",
        postgres: "15.20",
        loadAverageAtStart: [0.5, 0.4, 0.3],
        loadAverageAtEnd: [1, 0.8, 0.5],
      },
      runs: 3,
      engines: [{ name: "postgres", storage: "postgres:public.user_secrets", targeted: true }],
      concurrency: 8,
      durationMs: 3000,
      singleMs: 1500,
      growth: [],
      totalSeconds: 900,
    },
    summary: { rows, coldStart: [], growth: [] },
    notes,
  };
}

/** A measurement of 100 requests at `p50Ms`, `errors` of them failed (503s). */
export function measured(p50Ms: number, errors = 0): Measured {
  const result: LoadResult = {
    requests: 100,
    errors,
    statuses: errors ? { "200": 100 - errors, "503": errors } : { "200": 100 },
    p50Ms,
    p99Ms: p50Ms * 2,
    meanMs: p50Ms,
    rps: 1000 / p50Ms,
    seconds: p50Ms / 10,
    latencies: [],
  };
  return { result, cpuUsPerRequest: 100 };
}
