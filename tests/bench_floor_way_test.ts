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
import { createDatabase } from "../bench/support.ts";
import { benchResults, listRow, spread } from "./support/bench-results.ts";

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

const s = spread;

Deno.test("the tables set each route against its floor before the change and after it, with the reason", () => {
  const now = listRow({
    id: "postgres/list",
    baseline: "bare read (the creator's rows), behind the connection guard",
    ratioAt1: s(1.41, 1.38, 1.47),
    ratio: s(1.6),
  });
  const before = listRow({
    id: "postgres/list-vs-direct-floor",
    baseline: "bare read (the creator's rows), without the connection guard",
    ratioAt1: s(1.82, 1.73, 1.85),
    ratio: s(1.73),
  });
  const text = render(benchResults([now, before]));
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
  assert.ok(!render(benchResults([now])).includes(GUARDED_FLOOR_CHANGE));
});
