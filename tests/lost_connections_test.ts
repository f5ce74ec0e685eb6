/**
 * A connection the server ends, idle or in use, costs at most the request using it, and none of
 * that request's writes land in part (functions/_shared/db/postgres.ts on a real PostgreSQL).
 */
import assert from "node:assert/strict";
import { isDatabaseUnavailable } from "../functions/_shared/db/unavailable.ts";
import { openDatabase } from "../server/database.ts";
import { createFreshPostgres, type FreshPostgres } from "./support/fresh-postgres.ts";
import type { Database } from "../functions/_shared/db/db.ts";

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A promise and the function that fulfils it. */
function signal<T = void>() {
  let fulfil: (value: T) => void = () => {};
  const promise = new Promise<T>((resolve) => fulfil = resolve);
  return { promise, fulfil };
}

const adminUrl = Deno.env.get("DATABASE_URL");
if (!adminUrl) {
  console.warn("lost connection tests skipped: DATABASE_URL is not set");
}
const PID = "select pg_backend_pid() as pid";

/** Each test's own database; two connections: one may hold a lock while the other looks on. */
const FRESH = { namePrefix: "wallet_vault_lost_", maxConnections: 2, queryTimeoutMs: 30_000 };
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
  "when the server ends an idle connection, the next request is answered on a new one",
  // One connection only, so the next request must go through the one the server ended.
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
  // One connection only, so the next request needs the place of the one that was lost.
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

// On a connection the driver opened again by itself, the statements after the loss would run on
// their own, outside the transaction.
onPostgres(
  "when the server ends a connection between two statements of a transaction, none of it lands",
  { maxConnections: 1, queryTimeoutMs: 2_000 },
  async (db, fresh) => {
    await fresh.db.execScript("create table lost_gap (n int)");
    const started = signal<number>();
    const carryOn = signal();
    const began = performance.now();
    const transaction = settling(db.transaction(async (tx) => {
      const [{ pid }] = await tx.query<{ pid: number }>(PID);
      await tx.query("insert into lost_gap values (1)");
      started.fulfil(pid);
      await carryOn.promise; // work of its own between two statements
      await tx.query("insert into lost_gap values (2)");
    }));
    await terminate(fresh, await started.promise);
    carryOn.fulfil();
    const failed = await transaction;
    assert.equal(failed.outcome.status, "rejected", "the transaction reported success");
    assert.ok(isDatabaseUnavailable(failed.reason), `unavailable, not ${failed.reason}`);
    const ms = Math.round(failed.at - began);
    assert.ok(ms < 2_000 + 1_000, `answered by the deadline, not ${ms} ms after it started`);
    assert.deepEqual(await fresh.db.query("select n from lost_gap"), []);
    await db.query(PID);
  },
);

onPostgres(
  "when the server ends a connection in the middle of a batch, none of it lands",
  { maxConnections: 1, queryTimeoutMs: 2_000 },
  async (db, fresh) => {
    await fresh.db.execScript("create table lost_a (n int); create table lost_b (n int)");
    // A lock held elsewhere stops the batch at its first insert, the statements behind it queued.
    const held = signal();
    const unlock = signal();
    const locker = fresh.db.transaction(async (tx) => {
      await tx.query("lock table lost_a in access exclusive mode");
      held.fulfil();
      await unlock.promise;
    });
    await held.promise;
    const began = performance.now();
    const batch = settling(db.batch([
      { text: "insert into lost_a values ($1)", params: [1] },
      { text: "insert into lost_b values ($1)", params: [2] },
      { text: "insert into lost_b values ($1)", params: [3] },
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
    const landed = "select n from lost_a union all select n from lost_b";
    assert.deepEqual(await fresh.db.query(landed), []);
    await db.query(PID);
  },
);
