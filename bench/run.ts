/**
 * `deno task bench`: each route against its floor on each engine (bench/engines.ts), at concurrency
 * 1 and BENCH_CONCURRENCY, then cold start on the hosted runtime's Deno and latency as the tables
 * grow; the whole suite BENCH_RUNS times. Writes BENCH_OUT (bench/results/latest.json), from which
 * `deno task bench:report` generates bench/README.md. docs/performance.md explains how to read it.
 *
 * Knobs: BENCH_RUNS (3), BENCH_CONCURRENCY (8), BENCH_DURATION_MS (3000), BENCH_SINGLE_MS (1500),
 * BENCH_GROWTH (1,1000,100000; empty for none), BENCH_GROWTH_MS (2000), BENCH_TRAIL (reveal events
 * of one creator after 0: 100000,1000000; empty for none), BENCH_COLD_STARTS (9),
 * BENCH_ENGINES (postgres,pglite,deployed), BENCH_OUT.
 */
import { recoverPersonalSigner } from "../functions/_shared/auth/eth.ts";
import { findOlderDeno, OLDER_DENO_VERSION, type OlderDeno } from "../tests/support/older-deno.ts";
import { commandOutput } from "../tests/support/command-output.ts";
import { coldStarts } from "./cold-start.ts";
import { type Engine, ENGINE_NAMES, engines, functionEnv } from "./engines.ts";
import { activityScenario, creators, floorScenarios, type Load } from "./measure.ts";
import { proofPool, proofsFor } from "./measure.ts";
import { type Route, ROUTE_NAMES, routeScenarios, runInTurns } from "./measure.ts";
import type { ColdStartRun, GrowthRun, Results, RouteRun, TrailRun } from "./results.ts";
import { summarize } from "./results.ts";
import {
  benchCredential,
  log,
  median,
  newAccount,
  ROOT,
  seedCreatorsSql,
  seedTrailSql,
  serverEnv,
  trailBlockStart,
} from "./support.ts";
import { encodeCursor } from "../functions/user-secrets/creator-controls-store.ts";
import type { BenchDatabase, ServerProcess } from "./support.ts";

/** Positive integers from the environment; a bad value stops the run, naming the variable. */
function knob(name: string, fallback: string, allowEmpty = false): number[] {
  const raw = Deno.env.get(name) ?? fallback;
  const values = raw.split(",").filter((part) => part.trim() !== "").map(Number);
  if (values.some((v) => !Number.isSafeInteger(v) || v < 1) || !(values.length || allowEmpty)) {
    console.error(`${name} must be positive integers, not ${JSON.stringify(raw)}.`);
    Deno.exit(2);
  }
  return values;
}
const SETTINGS = {
  runs: knob("BENCH_RUNS", "3")[0],
  concurrency: knob("BENCH_CONCURRENCY", "8")[0],
  durationMs: knob("BENCH_DURATION_MS", "3000")[0],
  singleMs: knob("BENCH_SINGLE_MS", "1500")[0],
  growthMs: knob("BENCH_GROWTH_MS", "2000")[0],
};
const { runs: RUNS, concurrency: CONCURRENCY, growthMs: GROWTH_MS } = SETTINGS;
const GROWTH = knob("BENCH_GROWTH", "1,1000,100000", true);
const TRAIL = knob("BENCH_TRAIL", "100000,1000000", true);
const [COLD_STARTS] = knob("BENCH_COLD_STARTS", "9");
const OUT = Deno.env.get("BENCH_OUT") ?? "bench/results/latest.json";
const WANTED = (Deno.env.get("BENCH_ENGINES") ?? ENGINE_NAMES.join(",")).split(",");
if (WANTED.some((name) => !ENGINE_NAMES.includes(name))) {
  console.error(`BENCH_ENGINES: choose from ${ENGINE_NAMES.join(", ")}, not ${WANTED}.`);
  Deno.exit(2);
}
const warmupMs = (durationMs: number) => Math.min(500, durationMs / 2);

/**
 * wallet-proof's floor adds the signature work every sign-in must do to the write floor: one
 * recovery of the proof's signer and one ES256 signature of a session token, each with the fastest
 * implementation we have (the route's own WebAssembly recovery, WebCrypto's ECDSA), so the floor
 * is the least work the route must do.
 */
const message = "wallet-vault bench";
const signed = { message, signature: await newAccount().signMessage({ message }) };
const sessionKey = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, [
  "sign",
]);
// A session token's signing input is about this long (header and claims, base64url).
const signingInput = new TextEncoder().encode("e".repeat(420));
async function signatureWorkMs() {
  const samples: number[] = [];
  for (let i = 0, until = performance.now() + 500; i < 20 || performance.now() < until; i++) {
    const started = performance.now();
    recoverPersonalSigner(signed.message, signed.signature);
    await crypto.subtle.sign(
      { name: "ECDSA", hash: "SHA-256" },
      sessionKey.privateKey,
      signingInput,
    );
    if (i >= 20) samples.push(performance.now() - started); // the first 20 warm the JIT
  }
  return median(samples);
}

const pair = (route: number, floor: number) => ({ route, floor, ratio: route / floor });
const routeRuns: RouteRun[] = [];
const growthRuns: GrowthRun[] = [];
const trailRuns: TrailRun[] = [];
const coldRuns: ColdStartRun[] = [];
let runtime: OlderDeno | null = null;

/** Every route and its floor at 1 and at CONCURRENCY, on a fresh database; cold start after. */
async function benchEngine(engine: Engine) {
  const db = await engine.createDatabase();
  const keys = serverEnv();
  let server: ServerProcess | null = null;
  let floor: ServerProcess | null = null;
  try {
    const credential = await benchCredential(db);
    server = await engine.startServer(db, keys);
    const sessions = await creators(server.url, CONCURRENCY);
    const floorUsers = {
      readers: sessions.map((session) => session.userId),
      writers: (await creators(server.url, CONCURRENCY)).map((session) => session.userId),
    };
    const phases = [[1, SETTINGS.singleMs], [CONCURRENCY, SETTINGS.durationMs]] as const;
    const routes = new Map<Route, Load[]>(ROUTE_NAMES.map((route) => [route, []]));
    const floors = new Map<Route, Load[]>(ROUTE_NAMES.map((route) => [route, []]));
    const recoveries: number[] = [];
    let proofsRanOut = false;
    const floorTimed = (route: Route, concurrency: number, ms: number) => ({
      what: `${engine.name} ${route} floor at ${concurrency}`,
      scenario: floorScenarios(floor!.url, floorUsers)[route],
      warmupMs: warmupMs(ms),
    });
    // A new process answers its first requests many times slower (JIT, caches): warm each floor.
    const startFloor = async () => {
      const started = await engine.startFloor(db, keys);
      const scenarios = floorScenarios(started.url, floorUsers);
      for (const route of ROUTE_NAMES) {
        await runInTurns(2, 0, [{ what: "", scenario: scenarios[route], warmupMs: 250 }]);
      }
      return started;
    };
    // Where two processes may share the database, each route and its floor take turns.
    if (!engine.exclusive) floor = await startFloor();
    for (const [concurrency, ms] of phases) {
      const proofs = await proofPool(server.url, proofsFor(concurrency, ms));
      const scenarios = routeScenarios(server.url, credential, sessions, proofs);
      for (const route of ROUTE_NAMES) {
        const spends = route === "wallet-proof";
        const timed = {
          what: `${engine.name} ${route} at ${concurrency}`,
          scenario: scenarios[route],
          warmupMs: spends ? 0 : warmupMs(ms),
        };
        const both = floor === null ? [timed] : [timed, floorTimed(route, concurrency, ms)];
        const [load, floorLoad] = await runInTurns(concurrency, ms, both);
        routes.get(route)!.push(load);
        if (floorLoad) floors.get(route)!.push(floorLoad);
        if (spends) proofsRanOut ||= load.requests >= proofs.length;
        if (spends) recoveries.push(await signatureWorkMs());
      }
    }
    if (engine.exclusive) {
      await server.stop();
      floor = await startFloor();
      for (const [concurrency, ms] of phases) {
        for (const route of ROUTE_NAMES) {
          floors.get(route)!.push(
            ...await runInTurns(concurrency, ms, [floorTimed(route, concurrency, ms)]),
          );
        }
      }
    }
    for (const route of ROUTE_NAMES) {
      const [route1, routeLoaded] = routes.get(route)!;
      const [floor1, floorLoaded] = floors.get(route)!;
      const [recovery1, recoveryLoaded] = route === "wallet-proof" ? recoveries : [0, 0];
      routeRuns.push({
        engine: engine.name,
        route,
        at1: pair(route1.p50Ms, floor1.p50Ms + recovery1),
        loaded: pair(routeLoaded.p50Ms, floorLoaded.p50Ms + recoveryLoaded),
        errors: route1.errors + routeLoaded.errors,
        floorErrors: floor1.errors + floorLoaded.errors,
        proofsRanOut: route === "wallet-proof" && proofsRanOut,
      });
    }
    if (engine.name === "deployed" && runtime !== null) {
      coldRuns.push(await coldStarts(runtime, functionEnv(db, keys), COLD_STARTS));
      log(`cold start: ${JSON.stringify(coldRuns.at(-1))}`);
    }
  } finally {
    await floor?.stop();
    await server?.stop();
    await db.drop();
  }
}

/**
 * Runs seeding `sql` on the server's database; where the engine allows one process per database
 * (PGlite), with the server stopped and started again. Returns the server to measure with.
 */
async function seedBeside(
  engine: Engine,
  server: ServerProcess,
  db: BenchDatabase,
  keys: Record<string, string>,
  sql: string,
): Promise<ServerProcess> {
  if (engine.exclusive) await server.stop();
  await db.sql(sql);
  return engine.exclusive ? await engine.startServer(db, keys) : server;
}

/** GET, PUT and sign-in at concurrency 1 for one creator among 1, 1,000, … seeded in bulk. */
async function growth(engine: Engine) {
  const db = await engine.createDatabase();
  const keys = serverEnv();
  let server: ServerProcess | null = null;
  try {
    const credential = await benchCredential(db);
    server = await engine.startServer(db, keys);
    const sessions = await creators(server.url, 1);
    let seeded = 1;
    for (const creators of GROWTH) {
      if (creators > seeded) {
        server = await seedBeside(engine, server, db, keys, seedCreatorsSql(seeded + 1, creators));
        seeded = creators;
      }
      const proofs = await proofPool(server.url, proofsFor(1, GROWTH_MS));
      const scenarios = routeScenarios(server.url, credential, sessions, proofs);
      for (const route of ["list", "put", "wallet-proof"] as const) {
        const [{ p50Ms, errors }] = await runInTurns(1, GROWTH_MS, [{
          what: `${engine.name} ${route} with ${creators} creators`,
          scenario: scenarios[route],
          warmupMs: route === "wallet-proof" ? 0 : warmupMs(GROWTH_MS),
        }]);
        growthRuns.push({ engine: engine.name, creators, route, p50Ms, errors });
      }
    }
  } finally {
    await server?.stop();
    await db.drop();
  }
}

/**
 * GET, a page of activity and reveal at concurrency 1 for one creator whose trail grows: 0, then
 * each BENCH_TRAIL count of its own reveal events (and as many of others'), seeded in bulk. The page
 * is the one after the middle of the latest seeded block (at 0, the one after the first page).
 */
async function trail(engine: Engine) {
  const db = await engine.createDatabase();
  const keys = serverEnv();
  let server: ServerProcess | null = null;
  try {
    const credential = await benchCredential(db);
    server = await engine.startServer(db, keys);
    const [creator] = await creators(server.url, 1);
    const scenarios = (url: string) => routeScenarios(url, credential, [creator], []);
    // The creator's own activity at 0: its saves, and enough reveals for a full second page.
    for (let i = 0; i < 120; i++) {
      const { request, ok } = scenarios(server.url).reveal(0, i)!;
      const response = await fetch(request);
      if (!ok(response.status, await response.json())) throw new Error("a reveal failed");
    }
    const first = await fetch(`${server.url}/api/secrets/activity`, {
      headers: { authorization: `Bearer ${creator.accessToken}` },
    });
    let cursor: string | null = (await first.json()).nextCursor;
    let seeded = 0;
    for (const [step, events] of [0, ...TRAIL].entries()) {
      if (events > seeded) {
        server = await seedBeside(
          engine,
          server,
          db,
          keys,
          seedTrailSql(creator.userId, seeded, events, step),
        );
        cursor = encodeCursor(String(trailBlockStart(step) + Math.floor((events - seeded) / 2)));
        seeded = events;
      }
      const routes = {
        list: scenarios(server.url).list,
        activity: activityScenario(server.url, creator, cursor),
        reveal: scenarios(server.url).reveal,
      };
      for (const [route, scenario] of Object.entries(routes)) {
        const [{ p50Ms, errors }] = await runInTurns(1, GROWTH_MS, [{
          what: `${engine.name} ${route} with ${events} events`,
          scenario,
          warmupMs: warmupMs(GROWTH_MS),
        }]);
        trailRuns.push({
          engine: engine.name,
          events,
          route: route as TrailRun["route"],
          p50Ms,
          errors,
        });
      }
    }
  } finally {
    await server?.stop();
    await db.drop();
  }
}

const started = performance.now();
const loadAverage = () => Deno.loadavg().map((load) => Number(load.toFixed(2)));
const loadAtStart = loadAverage();
const { available, skipped, postgresVersion } = await engines(WANTED);
if (available.some((engine) => engine.name === "deployed")) {
  const older = await findOlderDeno();
  if ("found" in older) runtime = older.found;
  else skipped.push(`cold start: ${older.missing}`);
}
for (const note of skipped) log(`skipped: ${note}`);
for (let run = 1; run <= RUNS; run++) {
  log(`run ${run} of ${RUNS}: ${available.map((engine) => engine.name).join(", ")}`);
  for (const engine of available) {
    await benchEngine(engine);
    if (GROWTH.length > 0) await growth(engine);
    if (TRAIL.length > 0) await trail(engine);
  }
}

const cpu = /^model name\s*:\s*(.+)$/m.exec(await commandOutput("cat", ["/proc/cpuinfo"]) ?? "");
const head = await commandOutput("git", ["rev-parse", "--short", "HEAD"]);
const dirty = await commandOutput("git", ["status", "--porcelain", "--untracked-files=no"]);
const machine = `${cpu?.[1] ?? Deno.build.arch}, ${navigator.hardwareConcurrency} cores`;
const results: Results = {
  meta: {
    date: new Date().toISOString(),
    commit: head === null ? "unknown" : dirty ? `${head} + uncommitted changes` : head,
    machine: `${machine}, ${Deno.build.os}, Deno ${Deno.version.deno}`,
    postgres: postgresVersion,
    loadAverage: { start: loadAtStart, end: loadAverage() },
    ...SETTINGS,
    seconds: Math.round((performance.now() - started) / 1000),
    engines: available.map((engine) => ({ name: engine.name, targeted: engine.targeted })),
    skipped,
  },
  ...summarize(
    routeRuns,
    growthRuns,
    runtime && { runtime: OLDER_DENO_VERSION, runs: coldRuns },
    trailRuns,
  ),
};
const out = new URL(OUT, ROOT);
await Deno.mkdir(new URL(".", out), { recursive: true });
// Each array of figures on one line, as deno fmt leaves it: the file stays small and readable.
const text = JSON.stringify(results, null, 2)
  .replace(
    /\[\s+([\d.e+-]+(?:,\s+[\d.e+-]+)*)\s+\]/g,
    (_, figures) => `[${figures.split(/,\s+/).join(", ")}]`,
  );
await Deno.writeTextFile(out, text + "\n");
log(`wrote ${OUT} in ${results.meta.seconds} s; tables: deno task bench:report`);
