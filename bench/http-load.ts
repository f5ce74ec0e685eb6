/**
 * A closed-loop load generator: `concurrency` workers, each sending its next request as soon as
 * the last one is answered, for a fixed time or a fixed count. Latency is measured per request,
 * body read included; throughput is answers per second of wall time.
 */
import { percentile } from "./support.ts";

export interface LoadOptions {
  readonly concurrency: number;
  /** Stop starting requests after this long (after the warm-up). */
  readonly durationMs?: number;
  /** Or after this many requests in total (whichever comes first). */
  readonly count?: number;
  /** Requests sent first and not counted, to warm connections, JIT and statement caches. */
  readonly warmupMs?: number;
  /** The i-th request of worker w; null when the worker has nothing left to send. */
  readonly request: (worker: number, i: number) => Request | null;
  /** Whether an answer counts as a success (default: 2xx). */
  readonly ok?: (response: Response, body: string) => boolean;
  /** Called after the warm-up, right before the measured requests (e.g. to read CPU counters). */
  readonly beforeMeasuring?: () => Promise<void>;
}

export interface LoadResult {
  readonly requests: number;
  readonly errors: number;
  readonly statuses: Record<string, number>;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly meanMs: number;
  readonly rps: number;
  readonly seconds: number;
  /** Every measured request's latency, sorted (to merge results: mergeLoads). */
  readonly latencies: readonly number[];
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const ok = options.ok ?? ((response) => response.status >= 200 && response.status < 300);
  const counters = new Array(options.concurrency).fill(0);
  const next = (worker: number) => options.request(worker, counters[worker]++);

  if (options.warmupMs) {
    const until = performance.now() + options.warmupMs;
    await Promise.all(counters.map(async (_, worker) => {
      while (performance.now() < until) {
        const request = next(worker);
        if (request === null) return;
        await (await fetch(request)).arrayBuffer();
      }
    }));
  }

  await options.beforeMeasuring?.();
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let errors = 0;
  let started = 0;
  const start = performance.now();
  const stopAt = options.durationMs === undefined ? Infinity : start + options.durationMs;
  const limit = options.count ?? Infinity;
  await Promise.all(counters.map(async (_, worker) => {
    while (performance.now() < stopAt && started < limit) {
      const request = next(worker);
      if (request === null) return;
      started++;
      const t0 = performance.now();
      let status = "network error";
      let success = false;
      try {
        const response = await fetch(request);
        const body = await response.text();
        status = String(response.status);
        success = ok(response, body);
      } catch {
        // counted as an error below
      }
      latencies.push(performance.now() - t0);
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (!success) errors++;
    }
  }));
  const seconds = (performance.now() - start) / 1000;
  return loadResult(latencies, errors, statuses, seconds);
}

/** The figures of `latencies` (sorted here) taken over `seconds`. */
function loadResult(
  latencies: number[],
  errors: number,
  statuses: Record<string, number>,
  seconds: number,
): LoadResult {
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    errors,
    statuses,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    meanMs: latencies.reduce((sum, x) => sum + x, 0) / Math.max(1, latencies.length),
    rps: latencies.length / seconds,
    seconds,
    latencies,
  };
}

/** Measurements of the same thing taken in parts, as one: their requests pooled, their time added. */
export function mergeLoads(parts: readonly LoadResult[]): LoadResult {
  const statuses: Record<string, number> = {};
  for (const part of parts) {
    for (const [status, count] of Object.entries(part.statuses)) {
      statuses[status] = (statuses[status] ?? 0) + count;
    }
  }
  return loadResult(
    parts.flatMap((part) => part.latencies),
    parts.reduce((sum, part) => sum + part.errors, 0),
    statuses,
    parts.reduce((sum, part) => sum + part.seconds, 0),
  );
}

/** Times an in-process operation in a loop (CPU baselines): median and p99 per call, calls/s. */
export async function timeLoop(
  operation: (i: number) => Promise<unknown> | unknown,
  durationMs: number,
): Promise<{ p50Ms: number; p99Ms: number; opsPerSecond: number; runs: number }> {
  for (let i = 0; i < 20; i++) await operation(i); // warm-up
  const samples: number[] = [];
  const start = performance.now();
  for (let i = 0; performance.now() - start < durationMs; i++) {
    const t0 = performance.now();
    await operation(i);
    samples.push(performance.now() - t0);
  }
  const seconds = (performance.now() - start) / 1000;
  samples.sort((a, b) => a - b);
  return {
    p50Ms: percentile(samples, 50),
    p99Ms: percentile(samples, 99),
    opsPerSecond: samples.length / seconds,
    runs: samples.length,
  };
}
