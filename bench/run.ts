/**
 * `deno task bench`: how fast the service is, measured side by side in one run, loopback only.
 *
 * For each engine (ENGINES in bench/engines.ts: real PostgreSQL when DATABASE_URL is set or one
 * answers on 127.0.0.1:5432, and embedded PGlite), the local server (server/main.ts) runs as its
 * own process on a free loopback port on a fresh database, with exactly the environment meant for
 * it (nothing inherited from this process but PATH, HOME and Deno's own: bench/processes.ts
 * childEnv), and is checked to run on that engine (the `storage` GET /api/secrets reports) before
 * anything is measured; a mismatch aborts the bench. A closed-loop client then drives each route
 * at a fixed concurrency and at concurrency 1: nonce issue, the full wallet-proof, GET
 * /api/secrets (seven stored secrets: there are seven types), PUT, and reveal of all seven. Beside
 * them, in the same run, their floors: a bare Deno.serve handler doing the one indexed query each
 * route needs (a read of the creator's rows, a read of its ciphertexts and one committed insert in
 * one statement, one upsert; the nonce's committed without waiting for the WAL flush, as the nonce
 * is; the floors these replaced measured beside them: bench/floor-changes.ts) through the same
 * driver (bench/bare-server.ts, checked the same way), reached the way its route is (behind
 * the local server's connection guard on the local engines, with the floor without it measured
 * beside it: bench/floor-way.ts), each measured right after its route
 * where both processes can run at once (PostgreSQL; PGlite allows one process per data
 * directory, so there all routes run first, then all floors), and in-process bare secp256k1
 * recovery of one signature (viem) beside the peers' sign-in checks (the `siwe` package, viem's
 * verifySiweMessage). Then cold start per function and latency growth from 1 to 100,000 creators.
 *
 * The parts: bench/engines.ts (what it runs on), bench/routes.ts and bench/floors.ts (what it
 * measures over HTTP), bench/peers.ts (in process), bench/cold-start.ts, bench/growth.ts, and
 * bench/summary.ts (what a run records, and the median and min–max over the runs).
 *
 * The whole suite runs BENCH_RUNS times; every ratio is taken within its run, and the summary
 * gives each figure's median with its min–max. Everything goes to bench/results/latest.json;
 * `deno task bench:report` turns that into bench/README.md and the README's tables.
 *
 * Knobs: BENCH_RUNS (3), BENCH_CONCURRENCY (8), BENCH_DURATION_MS (3000), BENCH_SINGLE_MS (1500),
 * BENCH_GROWTH ("1,1000,100000"; "" for none), BENCH_ENGINES ("postgres,pglite,deployed"),
 * BENCH_OUT (bench/results/latest.json).
 */
import { coldStarts, copyDir } from "./cold-start.ts";
import {
  type BenchEngine,
  ENGINES,
  type FloorProcess,
  postgresAdmin,
  startChecked,
  startCheckedFloor,
} from "./engines.ts";
import { ALSO_AGAINST, type Floor, FLOOR_OF, FLOORS } from "./floor-catalogue.ts";
import {
  type FloorsMeasured,
  type FloorToMeasure,
  type Measured,
  measureFloor,
  measureFloorsAfter,
  pushEngineRows,
} from "./floors.ts";
import type { FloorWay } from "./floor-way.ts";
import { growthRun } from "./growth.ts";
import { exitOnUnknownChoices } from "./knobs.ts";
import { commit, machine } from "./machine.ts";
import { inProcess } from "./peers.ts";
import { serverEnv } from "./processes.ts";
import { proofPool, proofsFor, routes, workerSessions } from "./routes.ts";
import {
  CONCURRENCY,
  DURATION_MS,
  GROWTH,
  log,
  OUT,
  RUNS,
  SINGLE_MS,
  startedAt,
} from "./settings.ts";
import { type RunResult, summarize } from "./summary.ts";

const ROOT = new URL("../", import.meta.url);

async function benchEngine(
  engine: BenchEngine,
  recoveryNow: () => Promise<number>,
  result: RunResult,
) {
  const db = await engine.createDatabase();
  const keys = serverEnv();
  let server = await startChecked(engine, db, keys);
  let template: string | null = null;
  try {
    log(`${engine.name}: server up at ${server.url}, storage checked (${engine.storage})`);
    const sessions = await workerSessions(server, CONCURRENCY);
    // The floors' own creators: the write floor puts random bytes where ciphertexts were, which
    // reveal, measured after it, must not find.
    const floorSessions = await workerSessions(server, CONCURRENCY);
    // Enough for each phase's measuring time (proofsFor); one that still runs out is reported.
    const singleProofs = await proofPool(server, proofsFor(1, SINGLE_MS));
    const loadedProofs = await proofPool(server, proofsFor(CONCURRENCY, DURATION_MS));
    const phases = [
      { concurrency: 1, durationMs: SINGLE_MS, proofs: singleProofs },
      { concurrency: CONCURRENCY, durationMs: DURATION_MS, proofs: loadedProofs },
    ];
    const measures = ["nonce", "wallet-proof", "list", "put", "reveal"];
    // route → [at 1, loaded], and the floor measured for it, likewise.
    const route: Record<string, Measured[]> = {};
    const floorFor: Record<string, Measured[]> = {};
    const alsoFloorFor: FloorsMeasured["alsoFloorFor"] = {};
    const [way, besideWay] = engine.floorWays;
    const besideFloorFor: Record<string, Measured[]> | null = besideWay === undefined ? null : {};
    // wallet-proof's in-process recovery, timed right after it in each phase.
    const recoveryAt: number[] = [];
    const measureRoute = async (measure: string, phase: typeof phases[number]) => {
      const measured = await measureRouteOnly(measure, phase);
      if (measure === "wallet-proof") recoveryAt.push(await recoveryNow());
      return measured;
    };
    const measureRouteOnly = async (measure: string, phase: typeof phases[number]) => {
      const { results, cpu, proofsRanOut } = await routes(
        engine,
        server,
        sessions,
        phase.concurrency,
        phase.durationMs,
        phase.proofs,
        [measure],
      );
      return { result: results[measure], cpuUsPerRequest: cpu[measure], proofsRanOut };
    };
    const floorNow = (floor: FloorProcess, key: Floor, phase: typeof phases[number]) =>
      measureFloor(engine, floor, floorSessions, key, phase.concurrency, phase.durationMs);
    // Concurrency 1 first, on a database not yet churned by the loaded runs (autovacuum and
    // checkpoints after them were measurably slowing the unqueued latencies).
    if (!engine.exclusive) {
      // Each route, then its floors right after it: a busy moment of a shared machine hits both,
      // rather than the routes at one time and the floors a minute later.
      const floor = await startCheckedFloor(engine, db, keys, way);
      const beside = besideWay === undefined
        ? null
        : await startCheckedFloor(engine, db, keys, besideWay).catch(async (error) => {
          await floor.stop();
          throw error;
        });
      try {
        for (const phase of phases) {
          for (const measure of measures) {
            (route[measure] ??= []).push(await measureRoute(measure, phase));
            const floors: FloorToMeasure[] = [
              { server: floor, floor: FLOOR_OF[measure], into: floorFor },
              ...(ALSO_AGAINST[measure] ?? []).map(({ floor: also }) => ({
                server: floor,
                floor: also,
                into: alsoFloorFor[also] ??= {},
              })),
              ...(beside === null || besideFloorFor === null
                ? []
                : [{ server: beside, floor: FLOOR_OF[measure], into: besideFloorFor }]),
            ];
            await measureFloorsAfter(
              engine,
              measure,
              floors,
              floorSessions,
              phase.concurrency,
              phase.durationMs,
            );
          }
        }
      } finally {
        await Promise.allSettled([floor.stop(), beside?.stop()]);
      }
    } else {
      // One process at a time: every route, then every floor, one way after the other (the way
      // that goes first taking turns from run to run).
      for (const phase of phases) {
        for (const measure of measures) {
          (route[measure] ??= []).push(await measureRoute(measure, phase));
        }
      }
      await server.stop();
      const everyFloor = async (floorWay: FloorWay, floorKeys: readonly Floor[]) => {
        const floor = await startCheckedFloor(engine, db, keys, floorWay);
        const floors: Partial<Record<Floor, Measured[]>> = {};
        try {
          for (const phase of phases) {
            for (const key of floorKeys) {
              (floors[key] ??= []).push(await floorNow(floor, key, phase));
            }
          }
        } finally {
          await floor.stop();
        }
        return floors;
      };
      // The other way is measured only for the floors its rows use (not the plain read).
      const besideKeys = [...new Set(measures.map((measure) => FLOOR_OF[measure]))];
      const besideNow = () => besideWay === undefined ? null : everyFloor(besideWay, besideKeys);
      const besideFirst = result.run % 2 === 0;
      const earlyBeside = besideFirst ? await besideNow() : null;
      const floors = await everyFloor(way, Object.keys(FLOORS) as Floor[]);
      const besideFloors = besideFirst ? earlyBeside : await besideNow();
      for (const measure of measures) {
        floorFor[measure] = floors[FLOOR_OF[measure]]!;
        for (const { floor: also } of ALSO_AGAINST[measure] ?? []) {
          (alsoFloorFor[also] ??= {})[measure] = floors[also]!;
        }
        if (besideFloors !== null && besideFloorFor !== null) {
          besideFloorFor[measure] = besideFloors[FLOOR_OF[measure]]!;
        }
      }
      // Cold-started functions each get a copy, taken while no process has the directory open.
      template = await copyDir(db.dataDir!, "wallet-vault-bench-template-");
      server = await startChecked(engine, db, keys);
    }

    pushEngineRows(
      engine,
      measures,
      route,
      { floorFor, alsoFloorFor, besideFloorFor },
      recoveryAt,
      result,
    );
    await coldStarts(engine, db, keys, server, template, result);
  } finally {
    await server.stop();
    await db.drop();
    if (template) await Deno.remove(template, { recursive: true }).catch(() => {});
  }
  await growthRun(engine, result);
}

// ---------------------------------------------------------------------------------------------

const wanted = (Deno.env.get("BENCH_ENGINES") ?? "postgres,pglite,deployed").split(",");
exitOnUnknownChoices(wanted, ENGINES.map((engine) => engine.name), "BENCH_ENGINES: no engine ");
const engines: BenchEngine[] = [];
const notes: string[] = [];
for (const engine of ENGINES.filter((e) => wanted.includes(e.name))) {
  const why = await engine.available();
  if (why === null) engines.push(engine);
  else notes.push(`${engine.name}: skipped (${why})`);
}
const host = await machine(postgresAdmin());
const measuredCommit = await commit();

log(
  `${RUNS} run(s); engines: ${
    engines.map((e) => e.name).join(", ")
  }; concurrency ${CONCURRENCY}; ` +
    `${DURATION_MS} ms per route (${SINGLE_MS} ms at 1)`,
);
const runs: RunResult[] = [];
for (let run = 1; run <= RUNS; run++) {
  log(`run ${run} of ${RUNS}`);
  const result: RunResult = { run, rows: [], coldStart: [], growth: [] };
  const { recoveryNow } = await inProcess(result);
  for (const engine of engines) await benchEngine(engine, recoveryNow, result);
  runs.push(result);
}

notes.push(
  "GET /api/secrets and reveal run with 7 stored secrets per creator: the spec has seven secret types, so 7 is the most a creator can store. An answer counts only if it did what the row's label says (GET lists 7, reveal returns 7 values, sign-in issues a session, PUT names the type it saved); anything else is an error.",
  "Each route's floor is the bare server doing the one query the route cannot do without, through the same driver: GET /api/secrets the creator's rows, reveal the creator's ciphertexts and one committed insert (one statement), PUT one upsert, the nonce the same upsert committed without waiting for the WAL flush, as the nonce commits; wallet-proof's is one signature recovery (viem, in-process p50, timed right after the route) plus PUT's upsert, at the same concurrency. The floors these replaced on 2026-11-25 (reveal's read and insert as two statements, the nonce's upsert waiting for the flush) are measured beside them, and each such route is reported against both. It is reached the way its route is: on the local engines through the local server's connection guard (the floor without it, the yardstick until 2026-11-25, is measured beside it and reported as 'without the connection guard'; on PostgreSQL the floors after a route are measured in halves placed A B … B A, so that none is always the nearest to the route), on the deployed shape directly, through the same pooler. On PostgreSQL each floor is measured right after its route (the floor rows: next to GET, reveal, PUT and the nonce); on PGlite, which allows one process per data directory, after all the routes.",
  "Every server, floor and function process gets exactly its engine's environment (only PATH, HOME and Deno's own variables are inherited), and the bench checks the storage each reports before measuring it.",
  "'at 1' columns: the same route at concurrency 1 (unqueued latency) against the floor at concurrency 1; the main columns run at the fixed concurrency, where a two-core machine queues CPU work and p50 tracks throughput.",
  "server CPU µs/req: CPU time (user + system) of the server process per request at the fixed concurrency, from /proc; it moves much less than latency when other work shares the machine.",
  "Growth runs at concurrency 1 on one creator; the other creators are seeded in bulk with a session and all seven secrets each.",
);
const meta = {
  date: new Date().toISOString(),
  commit: measuredCommit,
  machine: { ...host, loadAverageAtEnd: Deno.loadavg() },
  runs: RUNS,
  engines: engines.map((e) => ({ name: e.name, storage: e.storage, targeted: e.targeted })),
  concurrency: CONCURRENCY,
  durationMs: DURATION_MS,
  singleMs: SINGLE_MS,
  growth: GROWTH,
  totalSeconds: (performance.now() - startedAt) / 1000,
};
const summary = summarize(runs);
await Deno.mkdir(new URL(OUT, ROOT).pathname.replace(/\/[^/]+$/, ""), { recursive: true });
await Deno.writeTextFile(
  new URL(OUT, ROOT),
  JSON.stringify({ meta, summary, runs, notes }, null, 2) + "\n",
);
log(`wrote ${OUT} (${meta.totalSeconds.toFixed(0)} s in all); tables: deno task bench:report`);
