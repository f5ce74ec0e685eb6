/**
 * The local engines' floors are reached the way their server is: through the connection guard.
 * The guarded floor really runs behind it (a head that never finishes is cut off at the guard's
 * deadline; the direct floor keeps waiting), each floor reports how it is reached, and a floor
 * reached the wrong way is caught before anything is measured against it. The published tables
 * show every route against the floor before the change and after it, side by side.
 */
import assert from "node:assert/strict";
import { type BenchEngine, ENGINES, startCheckedFloor } from "../bench/engines.ts";
import { floorWay, GUARDED_FLOOR_CHANGE } from "../bench/floor-way.ts";
import { serverEnv } from "../bench/processes.ts";
import { render } from "../bench/render.ts";
import type { BenchResults, Spread } from "../bench/results-types.ts";
import { createDatabase } from "../bench/support.ts";

const HEAD_TIMEOUT_MS = 300;

/** Whether the server closes a connection whose request head never finishes within `waitMs`. */
async function closesUnfinishedHead(url: string, waitMs: number): Promise<boolean> {
  const { hostname, port } = new URL(url);
  const conn = await Deno.connect({ hostname, port: Number(port) });
  try {
    await conn.write(new TextEncoder().encode("GET /ready HTTP/1.1\r\nHost: x\r\n"));
    const read = conn.read(new Uint8Array(1024)).then((n) => n === null, () => true);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const waited = new Promise<false>((resolve) =>
      timer = setTimeout(() => resolve(false), waitMs)
    );
    const closed = await Promise.race([read, waited]);
    clearTimeout(timer);
    return closed;
  } finally {
    conn.close();
  }
}

Deno.test({
  name:
    "a local engine's floor answers through the connection guard and says so, and a floor reached the wrong way is caught",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const pglite = ENGINES.find((engine) => engine.name === "pglite")!;
    assert.deepEqual(pglite.floorWays, ["guarded", "direct"]);
    assert.deepEqual(ENGINES.find((engine) => engine.name === "deployed")!.floorWays, ["direct"]);
    const keys = serverEnv({ LOCAL_HEADER_TIMEOUT_MS: String(HEAD_TIMEOUT_MS) });
    const db = await createDatabase("pglite", null);
    try {
      // PGlite: one process per data directory, so one floor at a time.
      const guarded = await startCheckedFloor(pglite, db, keys, "guarded");
      try {
        assert.equal(await closesUnfinishedHead(guarded.url, HEAD_TIMEOUT_MS * 10), true);
      } finally {
        await guarded.stop();
      }
      const direct = await startCheckedFloor(pglite, db, keys, "direct");
      try {
        assert.equal(await closesUnfinishedHead(direct.url, HEAD_TIMEOUT_MS * 4), false);
      } finally {
        await direct.stop();
      }
      const misrouted: BenchEngine = {
        ...pglite,
        startFloor: (db, keys) => pglite.startFloor(db, keys, "direct"),
      };
      await assert.rejects(
        startCheckedFloor(misrouted, db, keys, "guarded"),
        /the pglite floor, behind the connection guard is reached "direct", not guarded/,
      );
    } finally {
      await db.drop();
    }
  },
});

Deno.test("BENCH_FLOOR_WAY is guarded or direct (unset: direct), and anything else stops the floor", () => {
  assert.equal(floorWay(undefined), "direct");
  assert.equal(floorWay(""), "direct");
  assert.equal(floorWay("direct"), "direct");
  assert.equal(floorWay("guarded"), "guarded");
  assert.throws(() => floorWay("Guarded"), /BENCH_FLOOR_WAY must be "guarded" or "direct"/);
});

const s = (median: number, min = median, max = median): Spread => ({ median, min, max });

function listRow(id: string, baseline: string, ratioAt1: Spread, ratio: Spread) {
  return {
    id,
    engine: "postgres",
    measure: "GET /api/secrets (token, 7 stored)",
    concurrency: 8,
    baseline,
    runs: 3,
    requests: 3000,
    errors: 0,
    p50Ms: s(2.7),
    p99Ms: s(8),
    rps: s(2600),
    cpuUsPerRequest: s(333),
    baselineP50Ms: s(1.27),
    ratio,
    p50At1Ms: s(0.61),
    ratioAt1,
  };
}

function results(rows: BenchResults["summary"]["rows"]): BenchResults {
  return {
    meta: {
      date: "2026-01-02T03:04:05.000Z",
      commit: "abc1234",
      machine: {
        cpuModel: "Test CPU",
        cores: 2,
        memoryGiB: 24,
        os: "linux x86_64",
        deno: "2.9.6",
        v8: "15",
        postgres: "15.20",
        loadAverageAtStart: [0.5, 0.4, 0.3],
        loadAverageAtEnd: [1, 0.8, 0.5],
      },
      runs: 3,
      engines: [{ name: "postgres", storage: "postgres:public.user_secrets", targeted: true }],
      concurrency: 8,
      durationMs: 3000,
      singleMs: 1500,
      growth: [],
      totalSeconds: 900,
    },
    summary: { rows, coldStart: [], growth: [] },
    notes: [],
  };
}

Deno.test("the tables set each route against its floor before the change and after it, with the reason", () => {
  const now = listRow(
    "postgres/list",
    "bare read (the creator's rows), behind the connection guard",
    s(1.41, 1.38, 1.47),
    s(1.6),
  );
  const before = listRow(
    "postgres/list-vs-direct-floor",
    "bare read (the creator's rows), without the connection guard",
    s(1.82, 1.73, 1.85),
    s(1.73),
  );
  const text = render(results([now, before]));
  assert.ok(text.includes(GUARDED_FLOOR_CHANGE));
  assert.match(
    text,
    /\| postgres \| GET \/api\/secrets \| 1\.82× \(1\.73–1\.85\) \| 1\.41× \(1\.38–1\.47\) \| 1\.73× \| 1\.60× \|/,
  );
  // The target is held to the floor behind the guard.
  assert.match(
    text,
    /\| postgres \| GET \/api\/secrets \| 1\.5× \| 1\.41× \(1\.38–1\.47\) \| yes \|/,
  );
  // Without a floor measured the other way (the deployed shape), there is nothing to set beside.
  assert.ok(!render(results([now])).includes(GUARDED_FLOOR_CHANGE));
});
