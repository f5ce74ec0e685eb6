/**
 * Issuing a nonce does not wait for the WAL flush; spending one does (functions/wallet-proof/
 * sign-in-store.ts says why). The setting is local to the nonce's own transaction: nothing after it, on the
 * same pooled connection or any other, commits without waiting.
 */
import assert from "node:assert/strict";
import {
  type Database,
  queryWithoutWaitingForFlush,
  type Statement,
} from "../functions/_shared/db/db.ts";
import { parseConfig } from "../functions/_shared/config/config.ts";
import { openDatabase } from "../server/database.ts";
import { appOn, signIn, type TestApp, testEnv } from "./support/app.ts";
import { openTestDatabase } from "./support/database.ts";
import { describeWithDatabase } from "./support/suite.ts";

/** The database, recording the text of every statement sent through it, batch by batch. */
function recording(db: Database, sent: string[][]): Database {
  const texts = (statements: readonly Statement[]) => statements.map(({ text }) => text);
  return {
    ...db,
    query: (text, params) => (sent.push([text]), db.query(text, params)),
    batch: (statements) => (sent.push(texts(statements)), db.batch(statements)),
    transaction: (work) =>
      db.transaction((tx) =>
        work({ ...tx, query: (text, params) => (sent.push([text]), tx.query(text, params)) })
      ),
  };
}

const synchronousCommit = async (db: Database) =>
  (await db.query<{ value: string }>("select current_setting('synchronous_commit') as value"))[0]
    .value;

describeWithDatabase("a nonce's commit", {
  async "does not wait for the flush, and the sign-in that spends it does"(testApp) {
    const sent: string[][] = [];
    const app = appOn(recording(testApp.database.db, sent));
    const before = await synchronousCommit(testApp.database.db);

    await signIn(app);
    const nonceBatch = sent.findIndex((batch) =>
      batch.some((text) => text.includes("public.issue_nonce("))
    );
    assert.ok(nonceBatch >= 0, "the nonce was issued through the database");
    assert.match(sent[nonceBatch][0], /^set local synchronous_commit = off$/);
    const afterNonce = sent.slice(nonceBatch + 1).flat();
    assert.ok(afterNonce.some((text) => text.includes("sign_in")), "the sign-in was recorded");
    assert.ok(
      !afterNonce.some((text) => text.includes("synchronous_commit")),
      "the sign-in changed synchronous_commit",
    );
    // Set local: the next transaction, whichever connection it gets, is back to the default.
    assert.equal(await synchronousCommit(testApp.database.db), before);
  },

  async "inside the nonce's transaction the setting is off, and it ends with it"(testApp) {
    const db = testApp.database.db;
    const before = await synchronousCommit(db);
    const [inside] = await queryWithoutWaitingForFlush<{ value: string }>(db, {
      text: "select current_setting('synchronous_commit') as value",
    });
    assert.equal(inside.value, "off");
    assert.equal(await synchronousCommit(db), before);
  },
});

/**
 * What requests anyone can send make the database do: a refused proof and a refresh with a token
 * that is not live write only their rate-limit count, and that commit must not wait for the WAL
 * flush, or anyone could make the database flush at will (429s included). Counted in pg_stat_wal,
 * which a backend updates when idle only now and then but always when it exits: each measurement
 * runs on its own pool, closed before reading. Cluster-wide, so the WAL writer adds a few.
 */
const REQUESTS = 100;
Deno.test({
  name: "refused proofs and refreshes of dead tokens do not make the database flush per request",
  ignore: !Deno.env.get("DATABASE_URL"),
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const database = await openTestDatabase("postgres");
    const flushes = async () =>
      (await database.db.query<{ syncs: number }>(
        "select wal_sync::int as syncs from pg_stat_wal",
      ))[0].syncs;
    /** The flushes `work` caused, on an app of its own whose connections end before counting. */
    const flushedBy = async (work: (app: TestApp) => Promise<void>) => {
      const env = {
        DATABASE_URL: database.url!,
        // Low limits, so most requests are 429s, which must not flush either.
        RATE_LIMIT_PROOF_PER_MINUTE: "10",
        RATE_LIMIT_REFRESH_PER_MINUTE: "10",
      };
      const db = await openDatabase(parseConfig(testEnv(env)).database);
      const before = await flushes();
      try {
        await work(appOn(db, env));
      } finally {
        await db.close();
      }
      await new Promise((resolve) => setTimeout(resolve, 300)); // the backends' exits
      return (await flushes()) - before;
    };
    const post = (app: TestApp, path: string, body: unknown) =>
      app.fetch(path, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": "192.0.2.7" },
        body: JSON.stringify(body),
      }).then((response) => response.body?.cancel());
    try {
      await t.step("a refresh that spends a live token waits for the flush", async () => {
        const flushed = await flushedBy(async (app) => {
          const creator = await signIn(app);
          await post(app, "/api/auth/refresh", { refresh_token: creator.refreshToken });
        });
        assert.ok(flushed >= 1, `${flushed} flushes`);
      });
      const sends = {
        "a proof that is not one": (app: TestApp) =>
          post(app, "/api/auth/wallet-proof", { message: "x", signature: "0x00" }),
        "a refresh token that was never issued": (app: TestApp) =>
          post(app, "/api/auth/refresh", { refresh_token: crypto.randomUUID() }),
      };
      for (const [label, send] of Object.entries(sends)) {
        await t.step(label, async () => {
          const flushed = await flushedBy(async (app) => {
            for (let i = 0; i < REQUESTS; i++) await send(app);
          });
          assert.ok(flushed < REQUESTS / 2, `${REQUESTS} requests, ${flushed} flushes`);
        });
      }
    } finally {
      await database.close();
    }
  },
});
