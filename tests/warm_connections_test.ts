/**
 * Connections handed out warmest first (functions/_shared/db/warm-connections.ts): the one
 * released last goes to the next request, one kept too long or wanted by a request waiting in the
 * driver goes back to it. With fakes for the rules, and on a real PostgreSQL for what it is for:
 * after a burst opened several connections, requests one at a time are answered by one server
 * process, not by each in turn.
 */
import assert from "node:assert/strict";
import type postgres from "postgres";
import { createWarmConnections, PARKED_MS } from "../functions/_shared/db/warm-connections.ts";
import { openDatabase } from "../server/database.ts";
import { createFreshPostgres, type FreshPostgres } from "./support/fresh-postgres.ts";
import type { Database } from "../functions/_shared/db/db.ts";

/** A driver pool of named connections; records what went back to it. */
function fakePool(names: string[]) {
  const returned: string[] = [];
  let pending: ((reserved: postgres.ReservedSql) => void) | null = null;
  const connection = (name: string) =>
    ({ name, release: () => returned.push(name) }) as unknown as postgres.ReservedSql;
  const pool = {
    reserve: () =>
      names.length > 0
        ? Promise.resolve(connection(names.shift()!))
        : new Promise<postgres.ReservedSql>((resolve) => pending = resolve),
  } as unknown as postgres.Sql;
  return { pool, returned, handOver: (name: string) => pending?.(connection(name)) };
}

const nameOf = (reserved: postgres.ReservedSql) => (reserved as unknown as { name: string }).name;
const live = () => true;

Deno.test("the connection released last is handed out first", async () => {
  const { pool, returned } = fakePool(["a", "b", "c"]);
  const warm = createWarmConnections({ parkedMs: 60_000 });
  const [a, b, c] = [await warm.reserve(pool), await warm.reserve(pool), await warm.reserve(pool)];
  warm.release(pool, a, live);
  warm.release(pool, c, live);
  warm.release(pool, b, live);
  assert.deepEqual(
    [nameOf(await warm.reserve(pool)), nameOf(await warm.reserve(pool))],
    ["b", "c"],
  );
  assert.deepEqual(returned, []);
  warm.releaseAll();
  assert.deepEqual(returned, ["a"]);
});

Deno.test("a connection goes back to the driver when a request waits there, or once kept too long", async () => {
  const { pool, returned, handOver } = fakePool(["a"]);
  let clock = 0;
  const warm = createWarmConnections({ parkedMs: 20, now: () => clock });
  const a = await warm.reserve(pool);
  const waiting = warm.reserve(pool); // the driver has nothing free: it waits there
  warm.release(pool, a, live);
  assert.deepEqual(returned, ["a"], "released to the driver, for the request waiting in it");
  handOver("a");
  const again = await waiting;
  warm.release(pool, again, live);
  assert.deepEqual(returned, ["a"], "kept: no one waits");
  clock = 25;
  await new Promise((resolve) => setTimeout(resolve, 60));
  assert.deepEqual(returned, ["a", "a"], "given back once kept longer than parkedMs");
});

Deno.test("a kept connection the driver took back (closed) is dropped: not handed out, not released", async () => {
  const { pool, returned } = fakePool(["a", "b"]);
  const warm = createWarmConnections({ parkedMs: 60_000 });
  const [a, b] = [await warm.reserve(pool), await warm.reserve(pool)];
  let aOpen = true;
  warm.release(pool, b, live);
  warm.release(pool, a, () => aOpen);
  aOpen = false; // the server ended it while kept
  assert.equal(nameOf(await warm.reserve(pool)), "b");
  warm.releaseAll();
  assert.deepEqual(returned, []);
});

Deno.test("a replaced pool's kept connections are never handed out for the new pool", async () => {
  const old = fakePool(["old"]);
  const fresh = fakePool(["new"]);
  const warm = createWarmConnections({ parkedMs: 60_000 });
  warm.release(old.pool, await warm.reserve(old.pool), live);
  assert.equal(nameOf(await warm.reserve(fresh.pool)), "new");
  warm.releaseAll();
  assert.deepEqual(old.returned, ["old"]);
});

const adminUrl = Deno.env.get("DATABASE_URL");
const PID = "select pg_backend_pid() as pid";

/**
 * `body` with the service's database layer on a fresh PostgreSQL database (`fresh` is the test's
 * own connection to it); Postgres only.
 */
function onPostgres(
  name: string,
  settings: { maxConnections: number; queryTimeoutMs: number },
  body: (db: Database, fresh: FreshPostgres) => Promise<void>,
) {
  Deno.test({
    name,
    ignore: !adminUrl,
    sanitizeOps: false,
    sanitizeResources: false,
    async fn() {
      const fresh = await createFreshPostgres(adminUrl!, {
        namePrefix: "wallet_vault_warm_",
        maxConnections: 1,
        queryTimeoutMs: 30_000,
      });
      const db = await openDatabase({
        engine: "postgres",
        url: fresh.url,
        prepare: true,
        ...settings,
      });
      try {
        await body(db, fresh);
      } finally {
        await db.close();
        await fresh.drop();
      }
    },
  });
}

onPostgres(
  "after a burst opened four connections, requests one at a time reach one server process",
  { maxConnections: 4, queryTimeoutMs: 30_000 },
  async (db) => {
    const burst = await Promise.all(
      Array.from({ length: 8 }, () => db.query<{ pid: number }>(`${PID}, pg_sleep(0.05)`)),
    );
    assert.equal(new Set(burst.map(([row]) => row.pid)).size, 4, "the burst used all four");
    const oneAtATime = new Set<number>();
    for (let i = 0; i < 20; i++) oneAtATime.add((await db.query<{ pid: number }>(PID))[0].pid);
    assert.equal(oneAtATime.size, 1, `answered by ${oneAtATime.size} server processes`);
  },
);

onPostgres(
  "a kept connection the server ended is never handed out: the next request reconnects",
  // A short deadline: the kept connection handed out dead would hang a request until it.
  { maxConnections: 2, queryTimeoutMs: 3_000 },
  async (db, fresh) => {
    const [{ pid: kept }] = await db.query<{ pid: number }>(PID); // kept now
    // A restart, a failover or an administrator ends it while it waits for the next request.
    await fresh.db.query("select pg_terminate_backend($1)", [kept]);
    await new Promise((resolve) => setTimeout(resolve, 200)); // the close reaches the driver
    const [{ pid: next }] = await db.query<{ pid: number }>(PID);
    assert.notEqual(next, kept);
    // And once more after the give-back time, when the sweep has run over it.
    const [{ pid: again }] = await db.query<{ pid: number }>(PID);
    await fresh.db.query("select pg_terminate_backend($1)", [again]);
    await new Promise((resolve) => setTimeout(resolve, PARKED_MS + 500));
    await db.query(PID);
  },
);
