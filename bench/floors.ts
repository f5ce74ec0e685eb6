/**
 * The floors: a bare server (bench/bare-server.ts) doing the one query each route cannot do
 * without, measured beside its route; and the rows that set each route against its floor.
 */
import { SECRET_TYPES } from "../functions/_shared/vault/secret-types.ts";
import type { BenchEngine } from "./engines.ts";
import { runLoad } from "./http-load.ts";
import type { ServerProcess } from "./processes.ts";
import { ROUTE_LABELS, serverCpuMs } from "./routes.ts";
import { CONCURRENCY, log, WARMUP_MS } from "./settings.ts";
import type { RunResult } from "./summary.ts";
import type { Session } from "./support.ts";

/** What each floor does against the bare server (bench/bare-server.ts). */
export const FLOORS = {
  read: {
    label: "bare read (the creator's rows)",
    request: (url: string, user: string) => new Request(`${url}/?user=${user}`),
  },
  "ciphertext read": {
    label: "bare read (the creator's ciphertexts)",
    request: (url: string, user: string) =>
      new Request(`${url}/reveal?user=${user}`, { method: "POST" }),
  },
  // An audited reveal must commit a write: the same read plus one insert, in one round trip.
  "audited read": {
    label: "bare read (the creator's ciphertexts) + one committed insert",
    request: (url: string, user: string) =>
      new Request(`${url}/reveal-audited?user=${user}`, { method: "POST" }),
  },
  write: {
    label: "bare write (one upsert)",
    request: (url: string, user: string, i: number) =>
      new Request(`${url}/?user=${user}&type=${SECRET_TYPES[i % SECRET_TYPES.length]}`, {
        method: "PUT",
      }),
  },
} as const;
export type Floor = keyof typeof FLOORS;

/** The floor each route is compared with (wallet-proof's also adds one in-process recovery). */
export const FLOOR_OF: Record<string, Floor> = {
  nonce: "write",
  "wallet-proof": "write",
  list: "read",
  put: "write",
  reveal: "audited read",
};
/** A second floor a route is also reported against: reveal beside the plain read. */
export const ALSO_AGAINST: Partial<Record<string, Floor>> = { reveal: "ciphertext read" };
/** The route next to which each floor's own row is measured. */
export const FLOOR_ROW_FROM: Record<Floor, string> = {
  read: "list",
  "ciphertext read": "reveal",
  "audited read": "reveal",
  write: "put",
};

/** What makes a floor's answer count: a read returned all seven rows; a write answered 2xx. */
export function floorOk(floor: Floor): (response: Response, body: string) => boolean {
  return floor === "write"
    ? (response) => response.status >= 200 && response.status < 300
    : (response, body) => response.status === 200 && JSON.parse(body).secrets.length === 7;
}

export interface Measured {
  result: Awaited<ReturnType<typeof runLoad>>;
  cpuUsPerRequest: number | null;
}

/** One floor at one concurrency against the bare server, with its CPU per request. */
export async function measureFloor(
  engine: BenchEngine,
  bare: ServerProcess,
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
    `${engine.name} ${FLOORS[floor].label} at ${concurrency}: p50 ${result.p50Ms.toFixed(2)} ms, ${
      result.rps.toFixed(0)
    } req/s`,
  );
  return {
    result,
    cpuUsPerRequest: cpuBefore === null || cpuAfter === null
      ? null
      : ((cpuAfter - cpuBefore) * 1000) / result.requests,
  };
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
  };
}

/** The engine's rows of this run: each floor's own, then each route against its floor. */
export function pushEngineRows(
  engine: BenchEngine,
  measures: readonly string[],
  route: Record<string, Measured[]>,
  floorFor: Record<string, Measured[]>,
  alsoFloorFor: Record<string, Measured[]>,
  recoveryAt: readonly number[],
  result: RunResult,
) {
  for (const floorKey of Object.keys(FLOORS) as Floor[]) {
    const from = FLOOR_ROW_FROM[floorKey];
    const [single, loaded] = ALSO_AGAINST[from] === floorKey ? alsoFloorFor[from] : floorFor[from];
    result.rows.push({
      ...measuredFields(engine, single, loaded),
      id: `${engine.name}/floor:${floorKey}`,
      measure: `baseline: bare Deno.serve + ${FLOORS[floorKey].label.replace("bare ", "")}`,
      baseline: null,
      baselineP50Ms: null,
      ratio: null,
    });
  }
  // Each route against the one query it cannot do without, measured next to it: the nonce and
  // wallet-proof write (wallet-proof also recovers one signature), the list and reveal read.
  for (const measure of measures) {
    const [single, loaded] = route[measure];
    const [floorSingle, floorLoaded] = floorFor[measure];
    const [recoveryAt1, recoveryLoaded] = measure === "wallet-proof" ? recoveryAt : [0, 0];
    const floorMs = recoveryLoaded + floorLoaded.result.p50Ms;
    const floorAt1 = recoveryAt1 + floorSingle.result.p50Ms;
    result.rows.push({
      ...measuredFields(engine, single, loaded),
      id: `${engine.name}/${measure}`,
      measure: ROUTE_LABELS[measure],
      baseline: measure === "wallet-proof"
        ? "recovery + bare write"
        : FLOORS[FLOOR_OF[measure]].label,
      baselineP50Ms: floorMs,
      ratio: loaded.result.p50Ms / floorMs,
      ratioAt1: single.result.p50Ms / floorAt1,
    });
    const also = ALSO_AGAINST[measure];
    if (also !== undefined) {
      const [plainSingle, plainLoaded] = alsoFloorFor[measure];
      result.rows.push({
        ...result.rows[result.rows.length - 1],
        id: `${engine.name}/${measure}-vs-${also.replaceAll(" ", "-")}`,
        measure: `${ROUTE_LABELS[measure]}, against the plain read`,
        baseline: FLOORS[also].label,
        baselineP50Ms: plainLoaded.result.p50Ms,
        ratio: loaded.result.p50Ms / plainLoaded.result.p50Ms,
        ratioAt1: single.result.p50Ms / plainSingle.result.p50Ms,
      });
    }
  }
}
