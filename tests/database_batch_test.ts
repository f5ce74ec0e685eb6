/**
 * Database.batch, on both engines: statements known upfront run in one transaction (on a server,
 * in one round trip), every outcome is reported, and a failure anywhere commits nothing. And
 * Database.queryOverlappingCommit: work on a statement's rows that overlaps its COMMIT, whose
 * result is handed back only once the commit succeeded.
 */
import assert from "node:assert/strict";
import { atCommit } from "./support/at-commit.ts";
import { openTestDatabase, testEngines } from "./support/database.ts";
import { createFreshPostgres } from "./support/fresh-postgres.ts";
import { describeWithDatabase } from "./support/suite.ts";

const NONCE = (n: number) => `Batch${String(n).padStart(11, "0")}`;

describeWithDatabase("database batch", {
  async "all statements succeed: each one's rows, in order, and all committed"(
    { database: { db } },
  ) {
    const outcomes = await db.batch([
      {
        text:
          "insert into public.auth_nonces (nonce, expires_at) values ($1, now()) returning nonce",
        params: [NONCE(1)],
      },
      {
        text: "select count(*)::int as n from public.auth_nonces where nonce = $1",
        params: [NONCE(1)],
      },
      { text: "select $1::text as echo", params: ["third"] },
    ]);
    assert.deepEqual(outcomes, [
      { status: "fulfilled", value: [{ nonce: NONCE(1) }] },
      { status: "fulfilled", value: [{ n: 1 }] }, // the batch sees its own writes
      { status: "fulfilled", value: [{ echo: "third" }] },
    ]);
    const [stored] = await db.query("select nonce from public.auth_nonces where nonce = $1", [
      NONCE(1),
    ]);
    assert.deepEqual(stored, { nonce: NONCE(1) });
  },

  async "a failing statement: reported with its error, the rest aborted, nothing committed"(
    { database: { db } },
  ) {
    const outcomes = await db.batch([
      {
        text: "insert into public.auth_nonces (nonce, expires_at) values ($1, now())",
        params: [NONCE(2)],
      },
      // Violates the nonce's check constraint.
      { text: "insert into public.auth_nonces (nonce, expires_at) values ('no', now())" },
      {
        text: "insert into public.auth_nonces (nonce, expires_at) values ($1, now())",
        params: [NONCE(3)],
      },
    ]);
    assert.deepEqual(outcomes.map((outcome) => outcome.status), [
      "fulfilled",
      "rejected",
      "rejected",
    ]);
    const reasons = outcomes.map((outcome) =>
      outcome.status === "rejected" ? (outcome.reason as { code?: string }).code : null
    );
    assert.deepEqual(reasons, [null, "23514", "25P02"]); // check_violation, then in_failed_sql_transaction
    const stored = await db.query("select nonce from public.auth_nonces where nonce = any($1)", [
      [NONCE(2), NONCE(3)],
    ]);
    assert.deepEqual(stored, []);
    // The connection is clean afterwards: the next batch commits.
    const [next] = await db.batch([{ text: "select 1 as one" }]);
    assert.deepEqual(next, { status: "fulfilled", value: [{ one: 1 }] });
  },

  async "queryOverlappingCommit: use gets the rows, its result comes back, the write is committed"(
    { database: { db } },
  ) {
    const seen: unknown[] = [];
    const result = await db.queryOverlappingCommit(
      {
        text:
          "insert into public.auth_nonces (nonce, expires_at) values ($1, now()) returning nonce",
        params: [NONCE(4)],
      },
      (rows) => {
        seen.push(...rows);
        return Promise.resolve("used");
      },
    );
    assert.equal(result, "used");
    assert.deepEqual(seen, [{ nonce: NONCE(4) }]);
    const stored = await db.query("select nonce from public.auth_nonces where nonce = $1", [
      NONCE(4),
    ]);
    assert.deepEqual(stored, [{ nonce: NONCE(4) }]);
  },

  async "queryOverlappingCommit: a commit that fails throws its error and drops use's result"(
    { database: { db } },
  ) {
    await db.execScript("create table overlap_refused (id int primary key)");
    await atCommit(db, {
      table: "overlap_refused",
      name: "overlap_refused_refuse",
      body: "raise exception 'refused at commit';",
    });
    let used = false;
    await assert.rejects(
      db.queryOverlappingCommit(
        { text: "insert into overlap_refused (id) values (1) returning id" },
        () => used = true,
      ),
      (error: { message?: string }) => /refused at commit/.test(error.message ?? ""),
    );
    // On a server it ran, on rows the commit then refused; in-process it runs after the commit.
    assert.equal(used, db.engine === "postgres");
    assert.deepEqual(await db.query("select id from overlap_refused"), []);
  },

  async "queryOverlappingCommit: use throws: its error, after the commit"({ database: { db } }) {
    await assert.rejects(
      db.queryOverlappingCommit(
        {
          text:
            "insert into public.auth_nonces (nonce, expires_at) values ($1, now()) returning nonce",
          params: [NONCE(5)],
        },
        () => Promise.reject(new Error("use failed")),
      ),
      /use failed/,
    );
    // What the statement wrote was committed all the same: only use's result was lost.
    assert.equal(
      (await db.query("select 1 from public.auth_nonces where nonce = $1", [NONCE(5)])).length,
      1,
    );
  },
});

// In-process (PGlite) the statement has committed by the time use runs: nothing overlaps.
Deno.test({
  name: "queryOverlappingCommit on a server: use runs while the commit is still under way",
  ignore: !testEngines().includes("postgres"),
  async fn() {
    const { db, close } = await openTestDatabase("postgres");
    try {
      // The commit of a row in overlap_waits takes an advisory lock this test holds until use has
      // run, so the commit cannot finish before use does. Calling use only after the commit would
      // wait until the request's deadline (10 s here; the statement timeout is off by the time a
      // deferred trigger runs) and fail the test with DatabaseDeadlineError.
      await db.execScript("create table overlap_waits (id int primary key)");
      await atCommit(db, {
        table: "overlap_waits",
        name: "overlap_waits_at_commit",
        body: "perform pg_advisory_xact_lock(4242);",
      });
      let letCommit = () => {};
      const commitMayGo = new Promise<void>((resolve) => letCommit = resolve);
      let lockHeld = () => {};
      const holding = new Promise<void>((resolve) => lockHeld = resolve);
      const holder = db.transaction(async (tx) => {
        await tx.query("select pg_advisory_xact_lock(4242)");
        lockHeld();
        await commitMayGo;
      });
      await holding;
      let visibleDuringCommit: unknown;
      try {
        visibleDuringCommit = await db.queryOverlappingCommit(
          { text: "insert into overlap_waits (id) values (1) returning id" },
          async () => {
            // Another connection does not see the row yet: its transaction has not committed.
            const rows = await db.query("select id from overlap_waits");
            letCommit();
            return rows;
          },
        );
      } finally {
        // Whatever happened, the lock is let go, and the holder's own outcome is not left unheard.
        letCommit();
        await holder.catch(() => {});
      }
      assert.deepEqual(visibleDuringCommit, []);
      assert.deepEqual(await db.query("select id from overlap_waits"), [{ id: 1 }]);
    } finally {
      await close();
    }
  },
});

Deno.test({
  name: "queryOverlappingCommit on a server: the connection is free again once COMMIT is answered",
  ignore: !testEngines().includes("postgres"),
  async fn() {
    // One connection in all: were it held until use finished, use's own query could never get it
    // (and would fail at its deadline).
    const fresh = await createFreshPostgres(Deno.env.get("DATABASE_URL")!, {
      namePrefix: "wallet_vault_test_",
      maxConnections: 1,
      queryTimeoutMs: 10_000,
    });
    try {
      const result = await fresh.db.queryOverlappingCommit(
        { text: "select 1 as one" },
        async ([row]) => {
          const [{ two }] = await fresh.db.query<{ two: number }>("select 2 as two");
          return [row.one, two];
        },
      );
      assert.deepEqual(result, [1, 2]);
    } finally {
      await fresh.drop();
    }
  },
});
