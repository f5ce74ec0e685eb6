/**
 * The bench's honesty: a server it starts sees only the environment meant for it (a DATABASE_URL
 * in the bench's own environment must not turn the PGlite server into a Postgres one), a server on
 * the wrong engine is caught before it is measured, and the published tables (bench/README.md, the
 * only place they appear) are generated from a results file, with medians, spreads and missed
 * targets as the file says; a route whose floor failed, or a growth step with errors, says so.
 * bench:schedule, bench:profile and bench:cpu-profile are run small, on the real Postgres, to keep
 * them working; their counts are checked before anything runs.
 */
import assert from "node:assert/strict";
import { render } from "../bench/render.ts";
import { renderPage, renderProfile } from "../bench/report.ts";
import type { BenchResults, ProfileResults, Spread } from "../bench/results-types.ts";
import {
  assertStorage,
  childEnv,
  INHERITED_ENV,
  reportedStorage,
  serverEnv,
  startServer,
} from "../bench/processes.ts";
import { parsePositiveInteger, parsePositiveIntegers } from "../bench/knobs.ts";
import { ENGINES, poolerProblem } from "../bench/engines.ts";
import { pushEngineRows } from "../bench/floors.ts";
import { growthRows } from "../bench/growth.ts";
import { peerPortsByPid } from "../bench/processes.ts";
import { proofsFor, routes } from "../bench/routes.ts";
import { type RunResult, summarize } from "../bench/summary.ts";
import { createDatabase } from "../bench/support.ts";
import { benchResults, listRow, measured, spread } from "./support/bench-results.ts";

Deno.test("a bench child's environment holds Deno's basics and what it is given, nothing else of the parent's", () => {
  const saved = Deno.env.get("DATABASE_URL");
  Deno.env.set("DATABASE_URL", "postgres://postgres@127.0.0.1:1/not-for-the-child");
  try {
    const env = childEnv({ PGLITE_DATA_DIR: "/tmp/x" });
    assert.equal(env.DATABASE_URL, undefined);
    assert.equal(env.PGLITE_DATA_DIR, "/tmp/x");
    assert.equal(env.PATH, Deno.env.get("PATH"));
    const allowed = new Set([...INHERITED_ENV, "PGLITE_DATA_DIR"]);
    assert.deepEqual(Object.keys(env).filter((name) => !allowed.has(name)), []);
  } finally {
    if (saved === undefined) Deno.env.delete("DATABASE_URL");
    else Deno.env.set("DATABASE_URL", saved);
  }
});

Deno.test({
  name:
    "the bench's PGlite server runs on PGlite while the bench's own DATABASE_URL names a Postgres, and a check for another engine fails",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const saved = Deno.env.get("DATABASE_URL");
    // Any URL: before the fix, the child inherited it and config.ts preferred it to PGlite.
    Deno.env.set("DATABASE_URL", saved ?? "postgres://postgres@127.0.0.1:5432/postgres");
    const db = await createDatabase("pglite", null);
    const server = await startServer(serverEnv(db.env)).catch(async (error) => {
      await db.drop();
      throw error;
    });
    try {
      assert.equal(await reportedStorage(server.url), "pglite:public.user_secrets");
      await assertStorage("pglite server", server.url, "pglite:public.user_secrets");
      await assert.rejects(
        assertStorage("pglite server", server.url, "postgres:public.user_secrets"),
        /runs on pglite:public\.user_secrets, not postgres:public\.user_secrets/,
      );
    } finally {
      await server.stop();
      await db.drop();
      if (saved === undefined) Deno.env.delete("DATABASE_URL");
      else Deno.env.set("DATABASE_URL", saved);
    }
  },
});

const s = spread;

function results(listRatioAt1: Spread, errors = 0): BenchResults {
  const row = listRow({
    id: "postgres/list",
    baseline: "bare read (the creator's rows)",
    ratio: s(2.12, 1.9, 2.4),
    ratioAt1: listRatioAt1,
    errors,
  });
  return benchResults([row], ["A note."]);
}

Deno.test("the generated tables state the commit and machine, and each ratio as median (min–max)", () => {
  const text = render(results(s(1.34, 1.2, 1.51)));
  assert.match(text, /commit `abc1234`/);
  assert.match(text, /Test CPU \(2 cores, 24 GiB\).*Deno 2\.9\.6/s);
  assert.match(text, /PostgreSQL 15\.20/);
  assert.match(text, /3 runs of the whole suite/);
  assert.match(text, /\| 1\.34× \(1\.20–1\.51\) \|/);
  assert.match(text, /\| 2\.12× \(1\.90–2\.40\) \|/);
});

Deno.test("a target is met by the median ratio, and a miss or a row with errors is reported as one", () => {
  const met = render(results(s(1.45, 1.3, 1.7)));
  assert.match(
    met,
    /\| postgres \| GET \/api\/secrets \| 1\.5× \| 1\.45× \(1\.30–1\.70\) \| yes \|/,
  );
  const missed = render(results(s(1.62, 1.5, 1.8)));
  assert.match(missed, /\| 1\.62× \(1\.50–1\.80\) \| \*\*no\*\* \|/);
  assert.match(missed, /postgres, GET \/api\/secrets at concurrency 1: 1\.62× > 1\.5×/);
  const failing = render(results(s(1.2), 3));
  assert.match(failing, /\*\*no\*\* \(errors\)/);
});

Deno.test("a route whose floor had errors misses its target, however fast it was, and its row says so", () => {
  const result: RunResult = { run: 1, rows: [], coldStart: [], growth: [] };
  pushEngineRows(
    ENGINES.find((engine) => engine.name === "deployed")!,
    ["list", "put"],
    { list: [measured(2), measured(4)], put: [measured(3), measured(6)] },
    {
      // Every floor request beside GET failed, fast: the route looks 0.2× its "floor".
      floorFor: { list: [measured(10, 100), measured(20, 3)], put: [measured(2), measured(4)] },
      alsoFloorFor: {},
      besideFloorFor: null,
    },
    [0, 0],
    result,
  );
  const list = result.rows.find((row) => row.id === "deployed/list")!;
  assert.deepEqual([list.errors, list.floorErrors, list.ratioAt1], [0, 103, 0.2]);
  assert.equal(result.rows.find((row) => row.id === "deployed/put")!.floorErrors, 0);

  const results = benchResults(summarize([result]).rows);
  results.meta.engines = [{ name: "deployed", storage: "postgres", targeted: true }];
  const text = render(results);
  assert.match(
    text,
    /\| deployed \| GET \/api\/secrets \| 1\.5× \| 0\.20× \| \*\*no\*\* \(floor errors\) \| 3× \| 0\.20× \| \*\*no\*\* \(floor errors\) \|/,
  );
  assert.match(text, /\| deployed \| PUT \/api\/secrets \| 1\.5× \| 1\.50× \| yes \|/);
  // The engine's table names the floor's errors beside the route's own.
  assert.match(
    text,
    /\| GET \/api\/secrets \(token, 7 stored\) \|[^\n]*\| 0, \*\*floor: 103\*\* \|/,
  );
});

Deno.test("growth keeps each step's errors and flags them, and a pool of proofs that ran out", () => {
  const load = (p50Ms: number, errors: number) => ({ ...measured(p50Ms, errors).result });
  const step = (creators: number, errors: number, proofsRanOut: boolean): RunResult["growth"] =>
    growthRows("postgres", creators, {
      results: { list: load(1, errors), "wallet-proof": load(4, 0) },
      cpu: {},
      proofsRanOut,
    });
  const clean = step(1, 0, false);
  assert.deepEqual(clean.map((g) => [g.measure, g.errors, g.proofsRanOut]), [
    ["list", 0, undefined],
    ["wallet-proof", 0, undefined],
  ]);
  const runs: RunResult[] = [1, 2].map((run) => ({
    run,
    rows: [],
    coldStart: [],
    growth: [...step(1, 0, false), ...step(1000, run, run === 2)],
  }));
  const summary = summarize(runs);
  const at1000 = summary.growth.filter((g) => g.creators === 1000);
  assert.deepEqual(at1000.map((g) => [g.measure, g.errors, g.proofsRanOut]), [
    ["list", 3, 0],
    ["wallet-proof", 0, 1],
  ]);
  const results = benchResults([]);
  results.summary.growth = summary.growth;
  const text = render(results);
  assert.match(text, /\| postgres \| 1 \| 1\.00 \/ 2\.00 \| 4\.00 \/ 8\.00 \|/);
  assert.match(
    text,
    /\| postgres \| 1,000 \| 1\.00 \/ 2\.00 \(\*\*3 errors\*\*\) \| 4\.00 \/ 8\.00 \(proofs ran out in 1 run\) \|/,
  );
});

Deno.test({
  name:
    "wallet-proof's pool is sized for its measuring time, and one that runs out before the time is up is reported",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    // Twice and more the fastest rates measured here (~560/s at 8, ~330/s at 1), for the time given.
    assert.ok(proofsFor(8, 3000) >= 2 * 560 * 3);
    assert.ok(proofsFor(1, 1500) >= 2 * 330 * 1.5);
    assert.ok(proofsFor(1, 2000) > 160);
    // A stand-in that signs in every proof in ~5 ms.
    await using server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return Response.json({ access_token: "t" });
    });
    const process = {
      url: `http://127.0.0.1:${server.addr.port}`,
      env: {},
      pid: Deno.pid,
      stop: () => Promise.resolve(),
    };
    const proofs = (n: number) =>
      Array.from({ length: n }, () => ({ message: "m", signature: "s" }));
    const signIns = (n: number) =>
      routes(ENGINES[0], process, [], 1, 300, proofs(n), ["wallet-proof"]);
    const ranOut = await signIns(5);
    assert.equal(ranOut.proofsRanOut, true);
    assert.equal(ranOut.results["wallet-proof"].requests, 5);
    const lasted = await signIns(proofsFor(1, 300));
    assert.equal(lasted.proofsRanOut, false);
    assert.ok(lasted.results["wallet-proof"].requests < proofsFor(1, 300));
  },
});

Deno.test("the deployed function must reach the database through the pooler, and none of its sockets straight", () => {
  const ss = [
    '0      0      127.0.0.1:40952 127.0.0.1:6432  users:(("deno",pid=101,fd=31))',
    '0      0      127.0.0.1:40984 127.0.0.1:5432  users:(("deno",pid=202,fd=3))',
    '0      0      [::1]:40990     [::1]:5432      users:(("deno",pid=101,fd=9),("deno",pid=303,fd=9))',
    '0      0      127.0.0.1:5432  127.0.0.1:40984 users:(("postgres",pid=404,fd=7))',
  ].join("\n");
  const ports = peerPortsByPid(ss, [101, 303]);
  assert.deepEqual([...ports], [[101, [6432, 5432]], [303, [5432]]]);
  assert.equal(poolerProblem(new Map([[1, [6432]]]), 6432, 5432), null);
  assert.match(
    poolerProblem(new Map([[1, [6432, 5432]]]), 6432, 5432)!,
    /connects straight to the database \(port 5432\), not through the pooler \(port 6432\)/,
  );
  assert.match(poolerProblem(new Map([[1, []]]), 6432, 5432)!, /holds no connection to the pooler/);
  // A "pooler" URL that is the database's own, or none at all, is caught before any socket.
  for (const pooler of [5432, NaN]) {
    assert.match(poolerProblem(new Map([[1, [5432]]]), pooler, 5432)!, /is given no pooler/);
  }
});

Deno.test("bench/README.md is the run's tables under its own title, with the profile only when there is one", () => {
  const profile: ProfileResults = {
    date: "2026-01-02T03:04:05.000Z",
    deno: "2.9.6",
    rounds: 1,
    calls: 10,
    results: { "GET /api/secrets": [{ name: "bare query", us: 200 }] },
  };
  const page = renderPage(results(s(1.34, 1.2, 1.51)), null);
  assert.match(page, /^# Benchmark results\n/);
  assert.match(page, /\(\.\.\/docs\/performance\.md\)/);
  assert.match(page, /\n## Against the targets\n/);
  assert.match(page, /\n## Routes and floors: postgres/);
  assert.ok(page.includes(render(results(s(1.34, 1.2, 1.51)), 2)));
  assert.doesNotMatch(page, /Where one request's time goes/);
  const withProfile = renderPage(results(s(1.34, 1.2, 1.51)), profile);
  assert.match(
    withProfile,
    /\n## Where one request's time goes[^\n]*\n[\s\S]*\| bare query \| 200 \|/,
  );
  assert.ok(withProfile.endsWith("\n"));
});

Deno.test("the README carries no generated performance tables: they live in bench/README.md only", async () => {
  const readme = await Deno.readTextFile(new URL("../README.md", import.meta.url));
  assert.doesNotMatch(readme, /bench:start|Against the targets|Routes and floors/);
  assert.match(readme, /\(bench\/README\.md\)/);
});

Deno.test("the profile section names its run and lists each route's layers with their medians", () => {
  const text = renderProfile({
    date: "2026-01-02T03:04:05.000Z",
    commit: "abc1234",
    deno: "2.9.6",
    loadAverage: [1, 2, 3],
    rounds: 5,
    calls: 300,
    results: {
      "GET /api/secrets": [
        { name: "bare query (the floor's read)", us: 232.4 },
        { name: "+ role, claims and live-session check (list_user_secrets)", us: 420.6 },
      ],
    },
  });
  assert.match(text, /commit `abc1234`, Deno 2\.9\.6, load average 1\.00 \/ 2\.00 \/ 3\.00/);
  assert.match(text, /median of 1500 calls in 5 interleaved rounds/);
  assert.match(text, /### GET \/api\/secrets/);
  assert.match(text, /\| bare query \(the floor's read\) \| 232 \|/);
  assert.match(text, /\| \+ role, claims and live-session check \(list_user_secrets\) \| 421 \|/);
});

/** Runs a bench script with the permissions its `deno task` gives it; its exit code and stderr. */
async function runBenchScript(script: string, args: string[], env: Record<string, string>) {
  const run = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net",
      "--allow-env",
      "--allow-read",
      "--allow-write",
      "--allow-run",
      "--allow-sys",
      new URL(`../bench/${script}`, import.meta.url).pathname,
      ...args,
    ],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: run.code, stderr: new TextDecoder().decode(run.stderr) };
}

/** The bench scripts run on the real Postgres, which CI provides through DATABASE_URL. */
const withoutPostgres = !Deno.env.get("DATABASE_URL");

Deno.test({
  name:
    "bench:schedule measures each route against its floor in every block size asked for, on the real Postgres",
  ignore: withoutPostgres,
  async fn() {
    const out = await Deno.makeTempFile({ suffix: ".json" });
    try {
      const run = await runBenchScript("schedule.ts", ["postgres"], {
        SCHEDULE_REQUESTS: "6",
        SCHEDULE_BLOCKS: "1,3",
        SCHEDULE_REPEATS: "1",
        SCHEDULE_MEASURES: "list,reveal",
        SCHEDULE_OUT: out,
      });
      assert.equal(run.code, 0, run.stderr.slice(-2000));
      const { meta, rows } = JSON.parse(await Deno.readTextFile(out));
      assert.equal(meta.engine, "postgres");
      assert.equal(meta.floorWay, "guarded");
      assert.deepEqual(
        rows.map((row: { measure: string; block: number }) => `${row.measure}/${row.block}`),
        ["list/1", "list/3", "reveal/1", "reveal/3"],
      );
      for (const row of rows) {
        assert.ok(row.routeP50Ms > 0 && row.floorP50Ms > 0, JSON.stringify(row));
        assert.equal(row.ratio, row.routeP50Ms / row.floorP50Ms);
      }
    } finally {
      await Deno.remove(out);
    }
  },
});

Deno.test({
  name: "bench:profile times every layer of every route, and writes where PROFILE_OUT says",
  ignore: withoutPostgres,
  async fn() {
    const out = await Deno.makeTempFile({ suffix: ".json" });
    try {
      const run = await runBenchScript("profile.ts", [], {
        PROFILE_ROUNDS: "1",
        PROFILE_CALLS: "3",
        PROFILE_OUT: out,
      });
      assert.equal(run.code, 0, run.stderr.slice(-2000));
      const profile: ProfileResults = JSON.parse(await Deno.readTextFile(out));
      assert.equal(profile.rounds, 1);
      assert.equal(profile.calls, 3);
      assert.deepEqual(Object.keys(profile.results), [
        "GET /api/secrets",
        "PUT /api/secrets",
        "POST /api/auth/nonce",
        "POST /api/auth/wallet-proof",
      ]);
      for (const [route, steps] of Object.entries(profile.results)) {
        assert.ok(steps.length >= 3, route);
        for (const step of steps) assert.ok(step.us > 0, `${route}: ${step.name}`);
      }
    } finally {
      await Deno.remove(out);
    }
  },
});

Deno.test({
  name:
    "bench:cpu-profile profiles the routes asked for into PROFILE_DIR, and refuses unknown ones",
  ignore: withoutPostgres,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const refused = await runBenchScript("cpu-profile.ts", ["list", "nope"], {
        PROFILE_DIR: dir,
      });
      assert.equal(refused.code, 2);
      assert.match(refused.stderr, /No such route: nope; choose from list, /);
      const run = await runBenchScript("cpu-profile.ts", ["list", "floor-read"], {
        PROFILE_REQUESTS: "5",
        PROFILE_DIR: dir,
      });
      assert.equal(run.code, 0, run.stderr.slice(-2000));
      const { requests, summaries } = JSON.parse(
        await Deno.readTextFile(`${dir}/cpu-profile.json`),
      );
      assert.equal(requests, 5);
      assert.deepEqual(Object.keys(summaries), ["list", "floor-read"]);
      for (const route of ["list", "floor-read"]) {
        assert.ok(summaries[route].busyUsPerRequest > 0, route);
        const profile = JSON.parse(await Deno.readTextFile(`${dir}/cpu-${route}.cpuprofile`));
        assert.ok(profile.samples.length > 0, route);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("a bench count is a positive integer or a list of them, and a bad one names its variable", () => {
  assert.equal(parsePositiveInteger("BENCH_RUNS", undefined, 3), 3);
  assert.equal(parsePositiveInteger("BENCH_RUNS", " 5 ", 3), 5);
  for (const bad of ["", "0", "-1", "1.5", "abc", "1e3", "2,3", "99999999999999999999"]) {
    assert.throws(
      () => parsePositiveInteger("BENCH_RUNS", bad, 3),
      new RangeError(`BENCH_RUNS must be a positive integer, not ${JSON.stringify(bad)}.`),
    );
  }
  assert.deepEqual(parsePositiveIntegers("SCHEDULE_BLOCKS", undefined, [1, 10]), [1, 10]);
  assert.deepEqual(parsePositiveIntegers("SCHEDULE_BLOCKS", "1, 3,", [1]), [1, 3]);
  assert.deepEqual(parsePositiveIntegers("BENCH_GROWTH", "", [1], true), []);
  assert.throws(
    () => parsePositiveIntegers("SCHEDULE_BLOCKS", "", [1]),
    /SCHEDULE_BLOCKS must be positive integers separated by commas, not ""/,
  );
  assert.throws(
    () => parsePositiveIntegers("BENCH_GROWTH", "1,x", [1], true),
    /BENCH_GROWTH must be empty or positive integers separated by commas, not "1,x"/,
  );
});
