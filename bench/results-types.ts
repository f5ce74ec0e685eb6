/**
 * The shapes of the results files the report reads: bench/results/latest.json (bench/run.ts) and
 * bench/results/profile.json (bench/profile.ts).
 */

export interface Spread {
  median: number;
  min: number;
  max: number;
}

interface SummaryRow {
  id: string;
  engine: string;
  measure: string;
  concurrency: number;
  baseline: string | null;
  runs: number;
  requests: number;
  errors: number;
  /** A route's row: its floor's errors over the runs (absent from older results files). */
  floorErrors?: number;
  /** wallet-proof: in how many runs its proofs ran out (absent from older results files). */
  proofsRanOut?: number;
  p50Ms: Spread | null;
  p99Ms: Spread | null;
  rps: Spread | null;
  cpuUsPerRequest: Spread | null;
  baselineP50Ms: Spread | null;
  ratio: Spread | null;
  p50At1Ms: Spread | null;
  ratioAt1: Spread | null;
}

export interface BenchResults {
  meta: {
    date: string;
    commit: string;
    machine: {
      cpuModel: string;
      cores: number;
      memoryGiB: number;
      os: string;
      deno: string;
      v8: string;
      postgres: string | null;
      loadAverageAtStart: number[];
      loadAverageAtEnd: number[];
    };
    runs: number;
    engines: { name: string; storage: string; targeted: boolean }[];
    concurrency: number;
    durationMs: number;
    singleMs: number;
    growth: number[];
    totalSeconds: number;
  };
  summary: {
    rows: SummaryRow[];
    coldStart: {
      engine: string;
      function: string;
      firstResponseMs: Spread | null;
      importMs: Spread | null;
      overImportMs: Spread | null;
    }[];
    growth: {
      engine: string;
      creators: number;
      measure: string;
      p50Ms: Spread | null;
      p99Ms: Spread | null;
      /** Over the runs (absent from older results files). */
      errors?: number;
      proofsRanOut?: number;
    }[];
  };
  notes: string[];
}

export interface ProfileResults {
  date: string;
  commit?: string;
  deno: string;
  loadAverage?: number[];
  rounds: number;
  calls: number;
  results: Record<string, { name: string; us: number }[]>;
}
