/**
 * Issuing a nonce does not wait for the WAL flush; spending one does (functions/wallet-proof/
 * nonce.ts says why). The setting is local to the nonce's own transaction: nothing after it, on the
 * same pooled connection or any other, commits without waiting.
 */
import assert from "node:assert/strict";
import type { Database, Statement } from "../functions/_shared/db/db.ts";
import { WITHOUT_WAITING_FOR_FLUSH } from "../functions/wallet-proof/nonce.ts";
import { appOn, signIn } from "./support/app.ts";
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
    assert.deepEqual(sent[nonceBatch].slice(0, 1), [WITHOUT_WAITING_FOR_FLUSH]);
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
    const [, inside] = await db.batch([
      { text: WITHOUT_WAITING_FOR_FLUSH },
      { text: "select current_setting('synchronous_commit') as value" },
    ]);
    assert.equal(inside.status, "fulfilled");
    assert.equal((inside as PromiseFulfilledResult<{ value: string }[]>).value[0].value, "off");
    assert.equal(await synchronousCommit(db), before);
  },
});
