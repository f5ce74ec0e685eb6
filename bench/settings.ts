/**
 * The knobs of `deno task bench` (bench/run.ts), read once from the environment, and its log.
 */
import { integerKnob, integerListKnob } from "./knobs.ts";

export const RUNS = integerKnob("BENCH_RUNS", 3);
export const CONCURRENCY = integerKnob("BENCH_CONCURRENCY", 8);
export const DURATION_MS = integerKnob("BENCH_DURATION_MS", 3000);
export const WARMUP_MS = 500;
export const GROWTH = integerListKnob("BENCH_GROWTH", [1, 1000, 100000], true);
export const GROWTH_MS = 2000;
/** Each route also runs this long at concurrency 1, for its unqueued latency. */
export const SINGLE_MS = integerKnob("BENCH_SINGLE_MS", 1500);
export const OUT = Deno.env.get("BENCH_OUT") ?? "bench/results/latest.json";

export const startedAt = performance.now();
export const log = (line: string) =>
  console.error(`[${((performance.now() - startedAt) / 1000).toFixed(1).padStart(6)} s] ${line}`);
