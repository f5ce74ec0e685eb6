/**
 * bench/results/latest.json: what one `deno task bench` records, kept to the figures the tables
 * need. Every ratio is taken within its run; a Spread is [median, min, max] over the runs.
 */
import type { Route } from "./measure.ts";
import { spread } from "./support.ts";

/** One concurrency of one run: the route's p50 and its floor's, in ms, and their ratio. */
type Pair = { route: number; floor: number; ratio: number };

export interface RouteRun {
  engine: string;
  route: Route;
  at1: Pair;
  loaded: Pair;
  errors: number;
  floorErrors: number;
  proofsRanOut: boolean;
}

export type GrowthRun = {
  engine: string;
  creators: number;
  route: Route;
  p50Ms: number;
  errors: number;
};
/** What the trail growth times: the masked list, a page inside the activity, a reveal. */
export const TRAIL_ROUTES = {
  list: "GET /api/secrets (7 stored)",
  activity: "GET /api/secrets/activity (a page inside the trail)",
  reveal: "POST /api/secrets/reveal (all 7)",
} as const;
export type TrailRoute = keyof typeof TRAIL_ROUTES;

/** One creator's p50 with `events` reveal events of its own (and as many of others'). */
export type TrailRun = {
  engine: string;
  events: number;
  route: TrailRoute;
  p50Ms: number;
  errors: number;
};
export type ColdStartRun = { hello: number; functions: Record<string, number> };

export interface Results extends Omit<ReturnType<typeof summarize>, "trail"> {
  /** Absent from results written before the trail was measured. */
  trail?: ReturnType<typeof summarize>["trail"];
  meta: {
    date: string;
    commit: string;
    machine: string;
    postgres: string | null;
    loadAverage: { start: number[]; end: number[] };
    runs: number;
    concurrency: number;
    durationMs: number;
    singleMs: number;
    growthMs: number;
    seconds: number;
    engines: { name: string; targeted: boolean }[];
    /** Engines or parts that did not run, and why. */
    skipped: string[];
  };
}

const spreads = (pairs: readonly Pair[]) => ({
  route: spread(pairs.map((pair) => pair.route)),
  floor: spread(pairs.map((pair) => pair.floor)),
  ratio: spread(pairs.map((pair) => pair.ratio)),
});

/** `items` grouped by `key`, in the order each key first appears. */
function groups<T>(items: readonly T[], key: (item: T) => string): T[][] {
  const map = new Map<string, T[]>();
  for (const item of items) map.set(key(item), [...(map.get(key(item)) ?? []), item]);
  return [...map.values()];
}

const sum = <T>(items: readonly T[], count: (item: T) => number) =>
  items.reduce((total, item) => total + count(item), 0);

export function summarize(
  routes: readonly RouteRun[],
  growth: readonly GrowthRun[],
  cold: { runtime: string; runs: readonly ColdStartRun[] } | null,
  trail: readonly TrailRun[] = [],
) {
  return {
    routes: groups(routes, (r) => `${r.engine}/${r.route}`).map((runs) => ({
      engine: runs[0].engine,
      route: runs[0].route,
      at1: spreads(runs.map((r) => r.at1)),
      loaded: spreads(runs.map((r) => r.loaded)),
      errors: sum(runs, (r) => r.errors),
      floorErrors: sum(runs, (r) => r.floorErrors),
      /** In how many runs wallet-proof's proofs ran out before its time was up. */
      proofsRanOut: sum(runs, (r) => Number(r.proofsRanOut)),
    })),
    coldStart: cold === null || cold.runs.length === 0 ? null : {
      runtime: cold.runtime,
      hello: spread(cold.runs.map((run) => run.hello)),
      functions: Object.keys(cold.runs[0].functions).map((name) => ({
        name,
        firstAnswerMs: spread(cold.runs.map((run) => run.functions[name])),
        ratio: spread(cold.runs.map((run) => run.functions[name] / run.hello)),
      })),
    },
    growth: groups(growth, (g) => `${g.engine}/${g.creators}/${g.route}`).map((runs) => ({
      engine: runs[0].engine,
      creators: runs[0].creators,
      route: runs[0].route,
      p50Ms: spread(runs.map((g) => g.p50Ms)),
      errors: sum(runs, (g) => g.errors),
    })),
    trail: groups(trail, (t) => `${t.engine}/${t.events}/${t.route}`).map((runs) => ({
      engine: runs[0].engine,
      events: runs[0].events,
      route: runs[0].route,
      p50Ms: spread(runs.map((t) => t.p50Ms)),
      errors: sum(runs, (t) => t.errors),
    })),
  };
}
