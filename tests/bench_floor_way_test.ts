/**
 * The local engines' floors are reached the way their server is: through the connection guard.
 * The guarded floor really runs behind it (a head that never finishes is cut off at the guard's
 * deadline; the direct floor keeps waiting), each floor reports how it is reached, and a floor
 * reached the wrong way is caught before anything is measured against it. The published tables
 * show every route against the floor before the change and after it, side by side. Reveal's
 * audited floor is one statement, the nonce's floor commits as the nonce does, and both routes are
 * still set against their old floors beside the new ones.
 */
import assert from "node:assert/strict";
import type { Database, Row, Statement } from "../functions/_shared/db/db.ts";
import { SECRET_TYPES } from "../functions/_shared/vault/secret-types.ts";
import { issueNonceBatch } from "../functions/wallet-proof/nonce.ts";
import { WITHOUT_WAITING_FOR_FLUSH } from "../functions/_shared/db/db.ts";
import { type BenchEngine, ENGINES, startCheckedFloor } from "../bench/engines.ts";
import { FLOOR_CHANGES_REASON } from "../bench/floor-changes.ts";
import {
  AUDIT_INSERT,
  AUDITED_CIPHERTEXTS,
  auditedCiphertextsBare,
  auditedCiphertextsInTwoStatements,
  CIPHERTEXTS,
  UPSERT,
  upsertBare,
} from "../bench/floor-queries.ts";
import { floorWay, GUARDED_FLOOR_CHANGE } from "../bench/floor-way.ts";
import { FLOOR_OF, FLOORS } from "../bench/floor-catalogue.ts";
import { type Measured, measureFloorsAfter, pushEngineRows } from "../bench/floors.ts";
import { type LoadResult, mergeLoads } from "../bench/http-load.ts";
import { type RunResult, summarize } from "../bench/summary.ts";
import { serverEnv } from "../bench/processes.ts";
import { render } from "../bench/render.ts";
import { createDatabase } from "../bench/support.ts";
import { benchResults, listRow, measured, spread } from "./support/bench-results.ts";
import { openTestDatabase } from "./support/database.ts";

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

/** [at 1, loaded]. */
const pair = (at1: number, loaded: number) => [measured(at1), measured(loaded)];

/** The rows pushEngineRows makes for GET, PUT, reveal and the nonce with fixed routes and floors. */
function engineRows(name: string, besideFloorFor: Record<string, Measured[]> | null): RunResult {
  const result: RunResult = { run: 1, rows: [], coldStart: [], growth: [] };
  pushEngineRows(
    ENGINES.find((engine) => engine.name === name)!,
    ["list", "put", "reveal", "nonce"],
    { list: pair(2, 4), put: pair(3, 6), reveal: pair(4, 8), nonce: pair(1, 2) },
    {
      floorFor: { list: pair(1, 2), put: pair(1.5, 3), reveal: pair(2, 4), nonce: pair(1, 1) },
      alsoFloorFor: {
        "ciphertext read": { reveal: pair(1, 2) },
        "audited read in two statements": { reveal: pair(4, 4) },
        write: { nonce: pair(2, 4) },
      },
      besideFloorFor: besideFloorFor && { ...besideFloorFor, nonce: pair(0.5, 0.5) },
    },
    [0, 0],
    result,
  );
  return result;
}

Deno.test("each route's row is against its floor reached its own way, and its -vs-direct-floor row against the other", () => {
  const result = engineRows("postgres", {
    list: pair(0.5, 1),
    put: pair(1, 2),
    reveal: pair(1, 2),
  });
  const row = (id: string) => {
    const found = result.rows.find((r) => r.id === id);
    assert.ok(found, `${id} in ${result.rows.map((r) => r.id).join(", ")}`);
    return found;
  };
  const list = row("postgres/list");
  assert.equal(list.baseline, "bare read (the creator's rows), behind the connection guard");
  assert.deepEqual([list.ratioAt1, list.ratio], [2, 2]);
  const listBefore = row("postgres/list-vs-direct-floor");
  assert.equal(listBefore.baseline, "bare read (the creator's rows), without the connection guard");
  assert.deepEqual([listBefore.ratioAt1, listBefore.ratio], [4, 4]);
  assert.deepEqual([row("postgres/put").ratioAt1, row("postgres/put-vs-direct-floor").ratioAt1], [
    2,
    3,
  ]);
  assert.deepEqual(
    [row("postgres/reveal").ratioAt1, row("postgres/reveal-vs-ciphertext-read").ratioAt1],
    [2, 4],
  );
  assert.equal(row("postgres/reveal-vs-direct-floor").ratioAt1, 4);
  assert.equal(row("postgres/floor:read").p50Ms, 2);
  assert.equal(row("postgres/floor:read:direct").p50Ms, 1);
  assert.match(row("postgres/floor:write:direct").measure, /without the connection guard$/);
  // The plain read is measured one way only.
  assert.ok(!result.rows.some((r) => r.id === "postgres/floor:ciphertext read:direct"));

  // And the report sets the two side by side from exactly these rows.
  const text = render(benchResults(summarize([result]).rows));
  assert.match(
    text,
    /\| postgres \| GET \/api\/secrets \| 4\.00× \| 2\.00× \| 4\.00× \| 2\.00× \|/,
  );
  assert.match(
    text,
    /\| postgres \| PUT \/api\/secrets \| 3\.00× \| 2\.00× \| 3\.00× \| 2\.00× \|/,
  );
});

Deno.test("reveal and the nonce are set against their old floors too, side by side under the reason", () => {
  const result = engineRows("postgres", {
    list: pair(0.5, 1),
    put: pair(1, 2),
    reveal: pair(1, 2),
  });
  const row = (id: string) => result.rows.find((r) => r.id === id);
  // Against the new floors: the nonce's commits as the nonce does; reveal's is one statement.
  assert.equal(
    row("postgres/nonce")?.baseline,
    "bare write (one upsert) committed without waiting for the WAL flush, behind the connection guard",
  );
  assert.deepEqual([row("postgres/nonce")?.ratioAt1, row("postgres/nonce")?.ratio], [1, 2]);
  // And against the old ones, measured beside them.
  const nonceBefore = row("postgres/nonce-vs-write");
  assert.equal(nonceBefore?.measure, "POST /api/auth/nonce, against its floor until 2026-11-25");
  assert.deepEqual([nonceBefore?.ratioAt1, nonceBefore?.ratio], [0.5, 0.5]);
  const revealBefore = row("postgres/reveal-vs-audited-read-in-two-statements");
  assert.deepEqual([revealBefore?.ratioAt1, revealBefore?.ratio], [1, 2]);
  // Each new floor has its rows; an old one is measured one way only.
  assert.equal(row("postgres/floor:write without flush wait")?.p50Ms, 1);
  assert.equal(row("postgres/floor:write without flush wait:direct")?.p50Ms, 0.5);
  assert.equal(row("postgres/floor:audited read in two statements")?.p50Ms, 4);
  assert.equal(row("postgres/floor:audited read in two statements:direct"), undefined);

  const text = render(benchResults(summarize([result]).rows));
  assert.ok(text.includes(FLOOR_CHANGES_REASON));
  assert.match(
    text,
    /\| postgres \| POST \/api\/auth\/nonce \| bare write \(one upsert\), behind the connection guard \| bare write \(one upsert\) committed without waiting for the WAL flush, behind the connection guard \| 0\.50× \| 1\.00× \| 0\.50× \| 2\.00× \|/,
  );
  assert.match(
    text,
    /\| postgres \| POST \/api\/secrets\/reveal \| [^|]*, as two statements, behind the connection guard \| [^|]* \| 1\.00× \| 2\.00× \| 2\.00× \| 2\.00× \|/,
  );
});

/** `db`, with every call's statement texts noted in `sent` (one list per round of the driver). */
function recording(db: Database, sent: string[][]): Database {
  return {
    ...db,
    query<T extends Row>(text: string, params?: readonly unknown[]) {
      sent.push([text]);
      return db.query<T>(text, params);
    },
    batch(statements: readonly Statement[]) {
      sent.push(statements.map((statement) => statement.text));
      return db.batch(statements);
    },
  };
}

Deno.test("reveal's audited floor is one statement, and the nonce's floor commits as the nonce does", async () => {
  const { db, close } = await openTestDatabase("pglite");
  try {
    const user = crypto.randomUUID();
    await db.query(
      `insert into public.wallet_users (id, wallet_address) values ($1, '0x' || repeat('ab', 20))`,
      [user],
    );
    await db.query(
      `insert into public.user_secrets (user_id, secret_type, ciphertext, iv, key_id)
         select $1, t, gen_random_bytes(48), gen_random_bytes(12), 'k1' from unnest($2::text[]) t`,
      [user, SECRET_TYPES],
    );
    const reveals = async () =>
      (await db.query<{ n: number }>(
        `select count(*)::int as n from public.secret_events where user_id = $1 and action = 'reveal'`,
        [user],
      ))[0].n;
    const sent: string[][] = [];
    const floorDb = recording(db, sent);

    // One statement, so one round trip prepared or not: the read, with the insert in a WITH.
    assert.equal((await auditedCiphertextsBare(floorDb, user)).length, 7);
    assert.deepEqual(sent.splice(0), [[AUDITED_CIPHERTEXTS]]);
    assert.equal(AUDITED_CIPHERTEXTS, `with audit as (${AUDIT_INSERT}) ${CIPHERTEXTS}`);
    assert.equal(await reveals(), 1);
    // The floor it replaced: the same work as two statements.
    assert.equal((await auditedCiphertextsInTwoStatements(floorDb, user)).length, 7);
    assert.deepEqual(sent.splice(0), [[CIPHERTEXTS, AUDIT_INSERT]]);
    assert.equal(await reveals(), 2);

    // The nonce's floor: the nonce's own setting, then the upsert, in one transaction.
    const [routeSetting] = issueNonceBatch({
      nonce: "n",
      ttlSeconds: 60,
      address: null,
      chainId: null,
      bucket: "b",
      maxHits: 1,
      windowSeconds: 60,
    });
    assert.equal(routeSetting.text, WITHOUT_WAITING_FOR_FLUSH);
    const [written] = await upsertBare(
      floorDb,
      user,
      SECRET_TYPES[0],
      "without waiting for the flush",
    );
    assert.equal(written.created, false);
    assert.deepEqual(sent.splice(0), [[WITHOUT_WAITING_FOR_FLUSH, UPSERT]]);
    // PUT's floor waits for the flush, as PUT does.
    await upsertBare(floorDb, user, SECRET_TYPES[0]);
    assert.deepEqual(sent.splice(0), [[UPSERT]]);

    // And the bench asks the bare server for them so.
    assert.equal(FLOOR_OF.nonce, "write without flush wait");
    assert.equal(FLOOR_OF.put, "write");
    const nonceFloor = new URL(FLOORS[FLOOR_OF.nonce].request("http://floor", user, 0).url);
    assert.equal(nonceFloor.searchParams.get("synchronous_commit"), "off");
    assert.equal(
      new URL(FLOORS.write.request("http://floor", user, 0).url).search.includes("synchronous"),
      false,
    );
    assert.equal(
      new URL(FLOORS[FLOOR_OF.reveal].request("http://floor", user, 0).url).search,
      `?user=${user}`,
    );
  } finally {
    await close();
  }
});

Deno.test("a deployed route has no floor reached another way, and no row against one", () => {
  const result = engineRows("deployed", null);
  assert.equal(
    result.rows.find((r) => r.id === "deployed/list")?.baseline,
    "bare read (the creator's rows)",
  );
  assert.deepEqual(result.rows.filter((r) => /direct/.test(r.id)), []);
});

Deno.test("a floor measured in parts is one measurement of all their requests", () => {
  const part = (latencies: number[], seconds: number, errors = 0): LoadResult => ({
    requests: latencies.length,
    errors,
    statuses: { "200": latencies.length - errors, ...(errors ? { "500": errors } : {}) },
    p50Ms: 0,
    p99Ms: 0,
    meanMs: 0,
    rps: 0,
    seconds,
    latencies,
  });
  const merged = mergeLoads([part([1, 2, 9], 1), part([3, 4], 1, 1)]);
  assert.equal(merged.requests, 5);
  assert.equal(merged.errors, 1);
  assert.deepEqual(merged.statuses, { "200": 4, "500": 1 });
  assert.deepEqual(merged.latencies, [1, 2, 3, 4, 9]);
  assert.equal(merged.p50Ms, 3);
  assert.equal(merged.rps, 2.5);
});

Deno.test({
  name: "the floors after a route are measured in halves, A B … B A, so none is always the nearest",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    // Two stand-in floor servers that answer as the bare server does and log what they were sent.
    const sent: string[] = [];
    const stub = (name: string) =>
      Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
        const path = new URL(request.url).pathname;
        if (sent.at(-1) !== `${name}${path}`) sent.push(`${name}${path}`);
        return Response.json({ secrets: new Array(7).fill({}) });
      });
    await using guarded = stub("guarded");
    await using direct = stub("direct");
    const floorServer = (server: Deno.HttpServer<Deno.NetAddr>, way: "guarded" | "direct") => ({
      url: `http://127.0.0.1:${server.addr.port}`,
      env: {},
      pid: Deno.pid,
      way,
      stop: () => Promise.resolve(),
    });
    const into: Record<string, Measured[]> = {};
    const also: Record<string, Measured[]> = {};
    const beside: Record<string, Measured[]> = {};
    await measureFloorsAfter(
      ENGINES[0],
      "reveal",
      [
        { server: floorServer(guarded, "guarded"), floor: "audited read", into },
        { server: floorServer(guarded, "guarded"), floor: "ciphertext read", into: also },
        { server: floorServer(direct, "direct"), floor: "audited read", into: beside },
      ],
      [{ userId: crypto.randomUUID() } as never],
      1,
      60,
    );
    assert.deepEqual(sent, [
      "guarded/reveal-audited",
      "guarded/reveal",
      "direct/reveal-audited",
      "guarded/reveal",
      "guarded/reveal-audited",
    ]);
    for (const measurements of [into, also, beside]) {
      assert.equal(measurements.reveal.length, 1);
      assert.ok(measurements.reveal[0].result.requests > 0);
    }
  },
});
