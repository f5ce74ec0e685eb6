/**
 * The floors: a bare server (bench/bare-server.ts) doing the one query each route cannot do
 * without, measured beside its route; and the rows that set each route against its floor.
 */
import type { BenchEngine, FloorProcess } from "./engines.ts";
import {
  ALSO_AGAINST,
  type Floor,
  FLOOR_OF,
  FLOOR_ROW_FROM,
  floorOk,
  FLOORS,
} from "./floor-catalogue.ts";
import { alsoRowSuffix } from "./floor-changes.ts";
import { besideLabel, besideRowSuffix, wayLabel } from "./floor-way.ts";
import { mergeLoads, runLoad } from "./http-load.ts";
import { ROUTE_LABELS, serverCpuMs } from "./routes.ts";
import { CONCURRENCY, log, WARMUP_MS } from "./settings.ts";
import type { RunResult } from "./summary.ts";
import type { Session } from "./support.ts";

export interface Measured {
  result: Awaited<ReturnType<typeof runLoad>>;
  cpuUsPerRequest: number | null;
  /** wallet-proof only: its prepared proofs ran out before the measuring time was up. */
  proofsRanOut?: boolean;
}

/** One floor at one concurrency against the bare server, with its CPU per request. */
export async function measureFloor(
  engine: BenchEngine,
  bare: FloorProcess,
  sessions: Session[],
  floor: Floor,
  concurrency: number,
  durationMs: number,
): Promise<Measured> {
  let cpuBefore: number | null = null;
  const result = await runLoad({
    concurrency,
    durationMs,
    warmupMs: WARMUP_MS,
    beforeMeasuring: async () => {
      cpuBefore = await serverCpuMs(bare);
    },
    request: (w, i) => FLOORS[floor].request(bare.url, sessions[w % sessions.length].userId, i),
    ok: floorOk(floor),
  });
  const cpuAfter = await serverCpuMs(bare);
  log(
    `${engine.name} ${FLOORS[floor].label} (${bare.way}) at ${concurrency}: p50 ${
      result.p50Ms.toFixed(2)
    } ms, ${result.rps.toFixed(0)} req/s`,
  );
  return {
    result,
    cpuUsPerRequest: cpuBefore === null || cpuAfter === null
      ? null
      : ((cpuAfter - cpuBefore) * 1000) / result.requests,
  };
}

/** One floor measured in parts (measureFloorsAfter), as one measurement. */
function mergeMeasured(parts: readonly Measured[]): Measured {
  const result = mergeLoads(parts.map((part) => part.result));
  const cpuKnown = parts.every((part) => part.cpuUsPerRequest !== null);
  return {
    result,
    cpuUsPerRequest: cpuKnown
      ? parts.reduce((sum, part) => sum + part.cpuUsPerRequest! * part.result.requests, 0) /
        result.requests
      : null,
  };
}

/** A floor to measure after a route: its server, which query, and where its result goes. */
export interface FloorToMeasure {
  readonly server: FloorProcess;
  readonly floor: Floor;
  readonly into: Record<string, Measured[]>;
}

/**
 * Measures `floors` right after the route `measure`, each in two halves of `durationMs / 2`
 * placed symmetrically (A B … B A): a floor measured right after its route inherits what the
 * route left behind (WAL to flush, a busier cache), and this way every floor sits, on average, as
 * far from the route as every other, in every run. The halves are pooled into one measurement.
 */
export async function measureFloorsAfter(
  engine: BenchEngine,
  measure: string,
  floors: readonly FloorToMeasure[],
  sessions: Session[],
  concurrency: number,
  durationMs: number,
): Promise<void> {
  const halves = new Map<FloorToMeasure, Measured[]>(floors.map((floor) => [floor, []]));
  for (const floor of [...floors, ...floors.toReversed()]) {
    halves.get(floor)!.push(
      await measureFloor(engine, floor.server, sessions, floor.floor, concurrency, durationMs / 2),
    );
  }
  for (const [floor, parts] of halves) (floor.into[measure] ??= []).push(mergeMeasured(parts));
}

/** What every row of a measured pair (at 1, loaded) reports the same way. */
function measuredFields(engine: BenchEngine, single: Measured, loaded: Measured) {
  return {
    engine: engine.name,
    concurrency: CONCURRENCY,
    requests: loaded.result.requests,
    errors: loaded.result.errors + single.result.errors,
    p50Ms: loaded.result.p50Ms,
    p99Ms: loaded.result.p99Ms,
    rps: loaded.result.rps,
    p50At1Ms: single.result.p50Ms,
    cpuUsPerRequest: loaded.cpuUsPerRequest,
    ...(single.proofsRanOut || loaded.proofsRanOut ? { proofsRanOut: true } : {}),
  };
}

/** Each route's floors as measured next to it: [at 1, loaded]. */
export interface FloorsMeasured {
  /** Its floor, reached the engine's own way (engine.floorWays[0]): its targets use this one. */
  readonly floorFor: Record<string, Measured[]>;
  /** ALSO_AGAINST's floors, reached the same way: by floor, then by route. */
  readonly alsoFloorFor: Partial<Record<Floor, Record<string, Measured[]>>>;
  /** Its floor reached the other way (engine.floorWays[1]), when the engine has one. */
  readonly besideFloorFor: Record<string, Measured[]> | null;
}

/** The engine's rows of this run: each floor's own, then each route against its floor. */
export function pushEngineRows(
  engine: BenchEngine,
  measures: readonly string[],
  route: Record<string, Measured[]>,
  floors: FloorsMeasured,
  recoveryAt: readonly number[],
  result: RunResult,
) {
  const { floorFor, alsoFloorFor, besideFloorFor } = floors;
  const [way, besideWay] = engine.floorWays;
  const baselineRow = (id: string, label: string, [single, loaded]: Measured[]) =>
    result.rows.push({
      ...measuredFields(engine, single, loaded),
      id,
      measure: `baseline: bare Deno.serve + ${label.replace("bare ", "")}`,
      baseline: null,
      baselineP50Ms: null,
      ratio: null,
    });
  for (const floorKey of Object.keys(FLOORS) as Floor[]) {
    const from = FLOOR_ROW_FROM[floorKey];
    const own = FLOOR_OF[from] === floorKey;
    const measured = own ? floorFor[from] : alsoFloorFor[floorKey]?.[from];
    // A floor has a row when the route it is measured next to was measured.
    if (measured === undefined) continue;
    const label = FLOORS[floorKey].label;
    baselineRow(`${engine.name}/floor:${floorKey}`, label + wayLabel(way), measured);
    if (besideFloorFor !== null && besideWay !== undefined && own) {
      baselineRow(
        `${engine.name}/floor:${floorKey}:${besideWay}`,
        label + besideLabel(besideWay),
        besideFloorFor[from],
      );
    }
  }
  // Each route against the one query it cannot do without, measured next to it: the nonce, PUT and
  // wallet-proof write (wallet-proof also recovers one signature), the list and reveal read.
  for (const measure of measures) {
    const [single, loaded] = route[measure];
    const [recoveryAt1, recoveryLoaded] = measure === "wallet-proof" ? recoveryAt : [0, 0];
    const routeFields = measuredFields(engine, single, loaded);
    const against = (
      id: string,
      label: string,
      baseline: string,
      [floorSingle, floorLoaded]: Measured[],
      recovery: boolean,
    ) => {
      const floorMs = (recovery ? recoveryLoaded : 0) + floorLoaded.result.p50Ms;
      const floorAt1 = (recovery ? recoveryAt1 : 0) + floorSingle.result.p50Ms;
      result.rows.push({
        ...routeFields,
        id,
        measure: label,
        baseline,
        baselineP50Ms: floorMs,
        ratio: loaded.result.p50Ms / floorMs,
        ratioAt1: single.result.p50Ms / floorAt1,
        // A floor that failed is no yardstick: the verdict on this row fails with it (render.ts).
        floorErrors: floorSingle.result.errors + floorLoaded.result.errors,
      });
    };
    const floorLabel = (suffix: string) =>
      measure === "wallet-proof"
        ? `recovery + bare write${suffix}`
        : FLOORS[FLOOR_OF[measure]].label + suffix;
    against(
      `${engine.name}/${measure}`,
      ROUTE_LABELS[measure],
      floorLabel(wayLabel(way)),
      floorFor[measure],
      true,
    );
    for (const { floor: also, against: which } of ALSO_AGAINST[measure] ?? []) {
      against(
        `${engine.name}/${measure}${alsoRowSuffix(also)}`,
        `${ROUTE_LABELS[measure]}, against ${which}`,
        FLOORS[also].label + wayLabel(way),
        alsoFloorFor[also]![measure],
        false,
      );
    }
    if (besideFloorFor !== null && besideWay !== undefined) {
      against(
        `${engine.name}/${measure}${besideRowSuffix(besideWay)}`,
        `${ROUTE_LABELS[measure]}, against its floor${besideLabel(besideWay)}`,
        floorLabel(besideLabel(besideWay)),
        besideFloorFor[measure],
        true,
      );
    }
  }
}
