/**
 * `deno task bench:schedule`: how much a ratio at concurrency 1 depends on the order in which the
 * route and its floor are measured. The bench measures each route for BENCH_SINGLE_MS, then its
 * floor for as long: blocks of about a thousand requests each. Here each route and its floor take
 * turns in blocks of B requests, for B from 1 (every route request is followed by a floor request)
 * up to the bench's own block length, with the same servers, creators, requests and success checks
 * as `deno task bench`, one request at a time from this process. Same code, same minute: what
 * moves between the rows is the schedule alone.
 *
 *   deno task bench:schedule [engine]       (postgres, the default, or deployed)
 *
 * Knobs: SCHEDULE_REQUESTS per route and per floor for each block size (1000), SCHEDULE_BLOCKS
 * ("1,10,100,1000"), SCHEDULE_REPEATS (2), SCHEDULE_MEASURES ("list,put,reveal"; nonce too),
 * SCHEDULE_OUT (bench/results/schedule-<engine>.json). Writes that file and prints a table.
 */
import {
  type BenchEngine,
  ENGINES,
  postgresAdmin,
  startChecked,
  startCheckedFloor,
} from "./engines.ts";
import { FLOOR_OF, floorOk, FLOORS } from "./floor-catalogue.ts";
import { wayLabel } from "./floor-way.ts";
import { commit, machine } from "./machine.ts";
import { serverEnv } from "./processes.ts";
import { ROUTE_LABELS, ROUTE_OK, routeRequests, workerSessions } from "./routes.ts";
import { exitOnUnknownChoices, integerKnob, integerListKnob } from "./knobs.ts";
import { log } from "./settings.ts";
import { percentile } from "./support.ts";

const REQUESTS = integerKnob("SCHEDULE_REQUESTS", 1000);
const BLOCKS = integerListKnob("SCHEDULE_BLOCKS", [1, 10, 100, 1000]);
const REPEATS = integerKnob("SCHEDULE_REPEATS", 2);
const MEASURES = (Deno.env.get("SCHEDULE_MEASURES") ?? "list,put,reveal").split(",");
const WARMUP_REQUESTS = 200;

interface ScheduleRow {
  measure: string;
  block: number;
  repeat: number;
  routeP50Ms: number;
  floorP50Ms: number;
  ratio: number;
}

/** wallet-proof is left out: each of its requests spends a proof prepared in advance. */
const SCHEDULABLE = ["nonce", "list", "put", "reveal"];
exitOnUnknownChoices(MEASURES, SCHEDULABLE, "SCHEDULE_MEASURES: ");

const engineName = Deno.args[0] ?? "postgres";
const engine: BenchEngine | undefined = ENGINES.find((e) => e.name === engineName);
if (engine === undefined || engine.exclusive) {
  console.error(
    `bench:schedule runs a route and its floor at once: postgres or deployed, not ${engineName}.`,
  );
  Deno.exit(2);
}
const unavailable = await engine.available();
if (unavailable !== null) {
  console.error(`bench:schedule: ${engine.name} is not available (${unavailable}).`);
  Deno.exit(1);
}

/** One request, answered and checked as the bench checks it; its latency in ms, body read. */
async function timed(
  request: Request | null,
  ok: (response: Response, body: string) => boolean,
): Promise<number> {
  if (request === null) throw new Error("ran out of requests");
  const started = performance.now();
  const response = await fetch(request);
  const body = await response.text();
  const elapsed = performance.now() - started;
  if (!ok(response, body)) throw new Error(`${request.url}: ${response.status} ${body}`);
  return elapsed;
}

/** The bench's p50 (bench/http-load.ts): the nearest-rank percentile, not summary.ts's median. */
const p50 = (samples: number[]) => percentile([...samples].sort((a, b) => a - b), 50);

const db = await engine.createDatabase();
const keys = serverEnv();
const server = await startChecked(engine, db, keys);
// The floor the bench holds the route to: reached the way the engine's server is.
const [way] = engine.floorWays;
const floor = await startCheckedFloor(engine, db, keys, way).catch(async (error) => {
  await server.stop();
  await db.drop();
  throw error;
});
const rows: ScheduleRow[] = [];
try {
  const [session] = await workerSessions(server, 1);
  // The write floor puts random bytes where ciphertexts were: its creator is not reveal's.
  const [floorSession] = await workerSessions(server, 1);
  const routeRequest = routeRequests(server, [session], []);
  for (const measure of MEASURES) {
    const floorKey = FLOOR_OF[measure];
    const floorRequest = (i: number) => FLOORS[floorKey].request(floor.url, floorSession.userId, i);
    const routeCheck = ROUTE_OK[measure];
    const floorCheck = floorOk(floorKey);
    let sent = 0;
    const route = () => timed(routeRequest[measure](0, sent++), routeCheck);
    const bare = () => timed(floorRequest(sent++), floorCheck);
    for (let i = 0; i < WARMUP_REQUESTS; i++) {
      await route();
      await bare();
    }
    for (const block of BLOCKS) {
      for (let repeat = 1; repeat <= REPEATS; repeat++) {
        const routeMs: number[] = [];
        const floorMs: number[] = [];
        while (routeMs.length < REQUESTS) {
          const size = Math.min(block, REQUESTS - routeMs.length);
          for (let i = 0; i < size; i++) routeMs.push(await route());
          for (let i = 0; i < size; i++) floorMs.push(await bare());
        }
        const routeP50Ms = p50(routeMs);
        const floorP50Ms = p50(floorMs);
        const row = {
          measure,
          block,
          repeat,
          routeP50Ms,
          floorP50Ms,
          ratio: routeP50Ms / floorP50Ms,
        };
        rows.push(row);
        log(
          `${engine.name} ${measure}, blocks of ${block} (${repeat}/${REPEATS}): ` +
            `${row.routeP50Ms.toFixed(3)} / ${row.floorP50Ms.toFixed(3)} ms = ${
              row.ratio.toFixed(2)
            }x`,
        );
      }
    }
  }
} finally {
  await floor.stop();
  await server.stop();
  await db.drop();
}

console.log(`\n| route | floor | block | route p50 ms | floor p50 ms | ratio |`);
console.log(`| --- | --- | ---: | ---: | ---: | ---: |`);
for (const row of rows) {
  console.log(
    `| ${ROUTE_LABELS[row.measure]} | ${FLOORS[FLOOR_OF[row.measure]].label}${
      wayLabel(way)
    } | ${row.block} | ${row.routeP50Ms.toFixed(3)} | ${row.floorP50Ms.toFixed(3)} | ${
      row.ratio.toFixed(2)
    }× |`,
  );
}
const out = Deno.env.get("SCHEDULE_OUT") ??
  new URL(`results/schedule-${engine.name}.json`, import.meta.url).pathname;
const meta = {
  date: new Date().toISOString(),
  commit: await commit(),
  machine: await machine(postgresAdmin()),
  engine: engine.name,
  floorWay: way,
  requests: REQUESTS,
  repeats: REPEATS,
};
await Deno.writeTextFile(out, JSON.stringify({ meta, rows }, null, 2) + "\n");
log(`wrote ${out}`);
