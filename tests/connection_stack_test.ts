/**
 * Single-connection instances handed out warmest first (functions/_shared/db/connection-stack.ts):
 * its rules with fakes; on a real PostgreSQL, that requests one at a time after a burst reach one
 * server process, that a connection the server ends, idle or in use, costs at most the request
 * using it, none of whose writes land in part, that a database that refuses connections for a
 * moment leaves no more connections open than the maximum, and that a connection ended while the
 * driver sets it up costs a request, not the process.
 */
import assert from "node:assert/strict";
import { createConnectionStack } from "../functions/_shared/db/connection-stack.ts";
import { isDatabaseUnavailable } from "../functions/_shared/db/unavailable.ts";
import { openDatabase } from "../server/database.ts";
import { createFreshPostgres, type FreshPostgres } from "./support/fresh-postgres.ts";
import { freePort } from "./support/ports.ts";
import type { Database } from "../functions/_shared/db/db.ts";

type Fake = { readonly name: string };

/** Fakes named a, b, c… as they were opened; records which were ended, and if still in use. */
function fakeStack(max: number, end: (fake: Fake) => Promise<void> = () => Promise.resolve()) {
  const opened: string[] = [];
  const ended: string[] = [];
  const stack = createConnectionStack<Fake>({
    max,
    open: () => {
      const name = String.fromCharCode(97 + opened.length);
      opened.push(name);
      return { name };
    },
    end: (fake, state) => {
      ended.push(state === "busy" ? `${fake.name} in use` : fake.name);
      return end(fake);
    },
  });
  const names = async (count: number) => {
    const acquired: string[] = [];
    for (let i = 0; i < count; i++) acquired.push((await stack.acquire()).name);
    return acquired;
  };
  return { stack, opened, ended, names };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A promise and the function that fulfils it. */
function signal<T = void>() {
  let fulfil: (value: T) => void = () => {};
  const promise = new Promise<T>((resolve) => fulfil = resolve);
  return { promise, fulfil };
}

/** Whether `promise` has settled by the time everything already due has run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(() => done = true, () => done = true);
  await sleep(0);
  return done;
}

Deno.test("the instance released last is handed out first", async () => {
  const { stack, opened, names } = fakeStack(3);
  assert.deepEqual(opened, ["a"], "one is opened when the stack is made");
  const [a, b, c] = [await stack.acquire(), await stack.acquire(), await stack.acquire()];
  stack.release(a);
  stack.release(c);
  stack.release(b);
  assert.deepEqual(await names(3), ["b", "c", "a"]);
  assert.deepEqual(opened, ["a", "b", "c"], "none opened while one was free");
});

Deno.test("no more than max instances exist; the uses beyond wait and are served first come, first served", async () => {
  const { stack, opened } = fakeStack(2);
  const [a, b] = [await stack.acquire(), await stack.acquire()];
  const first = stack.acquire();
  const second = stack.acquire();
  assert.equal(await settled(first), false, "waits while both are in use");
  assert.deepEqual(opened, ["a", "b"]);
  stack.release(b);
  assert.equal(await first, b);
  assert.equal(await settled(second), false);
  stack.release(a);
  assert.equal(await second, a);
  assert.deepEqual(opened, ["a", "b"]);
});

Deno.test("a replaced instance is ended and never handed out again; its place goes to a fresh one", async () => {
  const { stack, opened, ended, names } = fakeStack(1);
  const a = await stack.acquire();
  const waiting = stack.acquire();
  stack.replace(a);
  assert.deepEqual(ended, ["a"]);
  const b = await waiting;
  assert.equal(b.name, "b", "the use waiting gets a fresh instance");
  stack.release(a); // a late release of the replaced one
  stack.release(b);
  assert.deepEqual(await names(1), ["b"]);
  assert.deepEqual(opened, ["a", "b"]);
});

Deno.test("replacing all ends the idle and the busy ones, and serves the uses waiting with fresh ones", async () => {
  const { stack, ended, names } = fakeStack(2);
  const [a, b] = [await stack.acquire(), await stack.acquire()];
  stack.release(b);
  stack.replaceAll();
  assert.deepEqual(ended.toSorted(), ["a in use", "b"]);
  const [c, d] = [await stack.acquire(), await stack.acquire()];
  assert.deepEqual([c.name, d.name], ["c", "d"], "the old ones are never handed out again");
  const waiting = stack.acquire();
  stack.replaceAll();
  assert.equal((await waiting).name, "e");
  stack.release(a); // late releases of replaced ones
  stack.release(d);
  assert.deepEqual(await names(1), ["f"]);
});

Deno.test("the first instance is opened when the stack is made, so settings it refuses fail then", () => {
  const open = (): never => {
    throw new TypeError("refused");
  };
  assert.throws(() => createConnectionStack({ max: 2, open, end: async () => {} }), TypeError);
});

Deno.test("close ends every instance, waits for them to end, and refuses the uses waiting and later ones", async () => {
  const ending = signal();
  const { stack, ended } = fakeStack(2, (fake) => fake.name === "a" ? ending.promise : sleep(0));
  const [a, b] = [await stack.acquire(), await stack.acquire()];
  stack.replace(a); // still ending when close is called
  const c = await stack.acquire();
  const waiting = stack.acquire();
  assert.equal(await settled(waiting), false);
  const closing = stack.close();
  assert.deepEqual(ended.toSorted(), ["a", "b in use", "c in use"]);
  await assert.rejects(waiting, { code: "CONNECTION_ENDED" });
  await assert.rejects(stack.acquire(), { code: "CONNECTION_ENDED" });
  assert.equal(await settled(closing), false, "waits for the instance still ending");
  ending.fulfil();
  await closing;
  stack.release(b); // after close: ignored, not handed out
  stack.release(c);
  await assert.rejects(stack.acquire(), { code: "CONNECTION_ENDED" });
});

const adminUrl = Deno.env.get("DATABASE_URL");
if (!adminUrl) {
  console.warn("connection stack tests on PostgreSQL skipped: DATABASE_URL is not set");
}
const PID = "select pg_backend_pid() as pid";

/** Each test's own database; two connections: one may hold a lock while the other looks on. */
const FRESH = { namePrefix: "wallet_vault_stack_", maxConnections: 2, queryTimeoutMs: 30_000 };
const SERVICE = { engine: "postgres", prepare: true } as const;

/** `body` with the service's database layer on a fresh database (`fresh`: the test's own). */
function onPostgres(
  name: string,
  settings: { maxConnections: number; queryTimeoutMs: number },
  body: (db: Database, fresh: FreshPostgres) => Promise<void>,
) {
  Deno.test({ name, ignore: !adminUrl, sanitizeOps: false, sanitizeResources: false }, async () => {
    const fresh = await createFreshPostgres(adminUrl!, FRESH);
    const db = await openDatabase({ ...SERVICE, url: fresh.url, ...settings });
    try {
      await body(db, fresh);
    } finally {
      await db.close();
      await fresh.drop();
    }
  });
}

/** How `operation` settled, and when (performance.now()). */
async function settling<T>(operation: Promise<T>) {
  const [outcome] = await Promise.allSettled([operation]);
  return { outcome, at: performance.now(), reason: (outcome as { reason?: unknown }).reason };
}

/** Ends server process `pid` and waits until it is gone and its client has seen the close. */
async function terminate(fresh: FreshPostgres, pid: number) {
  await fresh.db.query("select pg_terminate_backend($1)", [pid]);
  const alive = "select count(*)::int as n from pg_stat_activity where pid = $1";
  while ((await fresh.db.query<{ n: number }>(alive, [pid]))[0].n > 0) await sleep(10);
  await sleep(100);
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
  "when the server ends an idle connection, the next request is answered on a new one",
  // One instance only, so the next request must go through the one whose connection was ended.
  // A short deadline: a dead connection handed out would hang a request until it.
  { maxConnections: 1, queryTimeoutMs: 3_000 },
  async (db, fresh) => {
    let [{ pid }] = await db.query<{ pid: number }>(PID);
    // A restart, a failover or an administrator ends it while it waits for the next request.
    for (let round = 0; round < 2; round++) {
      await terminate(fresh, pid);
      const asked = performance.now();
      const [{ pid: now }] = await db.query<{ pid: number }>(PID); // rejects if it was handed out
      const ms = Math.round(performance.now() - asked);
      assert.ok(ms < 1000, `answered in ${ms} ms`);
      assert.notEqual(now, pid);
      pid = now;
    }
  },
);

onPostgres(
  "when the server ends a connection under a transaction, that transaction fails as unavailable at once and the next request succeeds",
  // One instance only, so the next request needs the place of the one whose connection was lost.
  { maxConnections: 1, queryTimeoutMs: 3_000 },
  async (db, fresh) => {
    const started = signal<number>();
    const transaction = settling(db.transaction(async (tx) => {
      started.fulfil((await tx.query<{ pid: number }>(PID))[0].pid);
      await tx.query("select pg_sleep(10)");
    }));
    const terminating = performance.now();
    await terminate(fresh, await started.promise);
    const failed = await transaction;
    assert.ok(isDatabaseUnavailable(failed.reason), `unavailable, not ${failed.reason}`);
    const ms = Math.round(failed.at - terminating);
    assert.ok(ms < 1000, `answered when the connection dropped, not ${ms} ms after`);
    assert.notEqual((await db.query<{ pid: number }>(PID))[0].pid, await started.promise);
  },
);

// On a connection the instance opened again by itself, the statements after the loss would run
// on their own, outside the transaction.
onPostgres(
  "when the server ends a connection between two statements of a transaction, none of it lands",
  { maxConnections: 1, queryTimeoutMs: 2_000 },
  async (db, fresh) => {
    await fresh.db.execScript("create table stack_gap (n int)");
    const started = signal<number>();
    const carryOn = signal();
    const began = performance.now();
    const transaction = settling(db.transaction(async (tx) => {
      const [{ pid }] = await tx.query<{ pid: number }>(PID);
      await tx.query("insert into stack_gap values (1)");
      started.fulfil(pid);
      await carryOn.promise; // work of its own between two statements
      await tx.query("insert into stack_gap values (2)");
    }));
    await terminate(fresh, await started.promise);
    carryOn.fulfil();
    const failed = await transaction;
    assert.equal(failed.outcome.status, "rejected", "the transaction reported success");
    assert.ok(isDatabaseUnavailable(failed.reason), `unavailable, not ${failed.reason}`);
    const ms = Math.round(failed.at - began);
    assert.ok(ms < 2_000 + 1_000, `answered by the deadline, not ${ms} ms after it started`);
    assert.deepEqual(await fresh.db.query("select n from stack_gap"), []);
    await db.query(PID);
  },
);

onPostgres(
  "when the server ends a connection in the middle of a batch, none of it lands",
  { maxConnections: 1, queryTimeoutMs: 2_000 },
  async (db, fresh) => {
    await fresh.db.execScript("create table stack_a (n int); create table stack_b (n int)");
    // A lock held elsewhere stops the batch at its first insert, the statements behind it queued.
    const held = signal();
    const unlock = signal();
    const locker = fresh.db.transaction(async (tx) => {
      await tx.query("lock table stack_a in access exclusive mode");
      held.fulfil();
      await unlock.promise;
    });
    await held.promise;
    const began = performance.now();
    const batch = settling(db.batch([
      { text: "insert into stack_a values ($1)", params: [1] },
      { text: "insert into stack_b values ($1)", params: [2] },
      { text: "insert into stack_b values ($1)", params: [3] },
    ]));
    const waiting = "select pid from pg_stat_activity where wait_event_type = 'Lock'";
    let blocked: { pid: number }[] = [];
    while (blocked.length === 0) blocked = await sleep(10).then(() => fresh.db.query(waiting));
    await terminate(fresh, blocked[0].pid);
    unlock.fulfil();
    await locker;
    const failed = await batch;
    assert.ok(isDatabaseUnavailable(failed.reason), `unavailable, not ${failed.reason}`);
    const ms = Math.round(failed.at - began);
    assert.ok(ms < 2_000 + 1_000, `answered by the deadline, not ${ms} ms after it started`);
    await sleep(200); // anything sent late has landed
    const landed = "select n from stack_a union all select n from stack_b";
    assert.deepEqual(await fresh.db.query(landed), []);
    await db.query(PID);
  },
);

/**
 * A TCP relay to `target` on a port of its own that can be stopped and started: "the database".
 * With `holdFrom`, the first client message holding that text and everything after it are not
 * passed on (until `passAll`), so the server never answers it.
 */
function relay(target: URL, holdFrom?: string) {
  const port = freePort();
  let listener: Deno.Listener | null = null;
  const open = new Set<Deno.Conn>();
  let upstream = 0;
  let holding = false;
  const decoder = new TextDecoder();
  const untilHeld = () =>
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        holding ||= holdFrom !== undefined && decoder.decode(chunk).includes(holdFrom);
        if (!holding) controller.enqueue(chunk);
      },
    });
  return {
    port,
    /** Connections currently open through it to the server. */
    upstream: () => upstream,
    /** Whether a message holding `holdFrom` came and was held. */
    held: () => holding,
    /** Passes on whatever comes from now on. */
    passAll() {
      holdFrom = undefined;
      holding = false;
    },
    start() {
      listener = Deno.listen({ hostname: "127.0.0.1", port });
      (async () => {
        for await (const client of listener!) {
          open.add(client);
          const hostname = target.hostname;
          Deno.connect({ hostname, port: Number(target.port || 5432) }).then((server) => {
            open.add(server);
            upstream++;
            client.readable.pipeThrough(untilHeld()).pipeTo(server.writable).catch(() => {});
            server.readable.pipeTo(client.writable).catch(() => {}).finally(() => upstream--);
          }, () => client.close());
        }
      })().catch(() => {});
    },
    stop() {
      listener?.close();
      listener = null;
      for (const conn of open) {
        try {
          conn.close();
        } catch {
          // closed already
        }
      }
      open.clear();
    },
  };
}

Deno.test({
  name:
    "a database that refuses connections and is back within the reconnect backoff leaves no more connections open than the maximum, and none after close",
  ignore: !adminUrl,
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const database = relay(new URL(adminUrl!));
  const url = Object.assign(new URL(adminUrl!), { port: String(database.port) }).toString();
  const db = await openDatabase({ ...SERVICE, url, maxConnections: 1, queryTimeoutMs: 2_000 });
  try {
    // Refused: each failed use replaces its instance, whose driver still connects once more for it.
    for (let i = 0; i < 10; i++) {
      await assert.rejects(db.query(PID), (error) => isDatabaseUnavailable(error));
    }
    database.start();
    for (let i = 0; i < 3; i++) await db.query(PID);
    await sleep(500);
    assert.ok(
      database.upstream() <= 1,
      `${database.upstream()} connections open, at most 1 wanted`,
    );
  } finally {
    await db.close();
  }
  await sleep(300);
  assert.equal(database.upstream(), 0, "connections left open after close");
  database.stop();
});

Deno.test({
  name:
    "a connection ended while the driver reads the server's array types costs its request a 503, not the process",
  ignore: !adminUrl,
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  // postgres.js asks for the array types on each new connection, before its first request.
  const database = relay(new URL(adminUrl!), "typcategory");
  database.start();
  const url = Object.assign(new URL(adminUrl!), { port: String(database.port) }).toString();
  const db = await openDatabase({ ...SERVICE, url, maxConnections: 1, queryTimeoutMs: 500 });
  try {
    // Past the deadline the instance is replaced and ended, its connection still in that query.
    await assert.rejects(db.query(PID), (error) => isDatabaseUnavailable(error));
    assert.ok(database.held(), "the array types query was held");
    await sleep(500); // the replaced instance is ended within 200 ms
    database.passAll();
    await db.query(PID);
  } finally {
    await db.close();
    database.stop();
  }
});
