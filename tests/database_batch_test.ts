/**
 * Database.batch, on both engines: statements known upfront run in one transaction (on a server,
 * in one round trip), every outcome is reported, and a failure anywhere commits nothing.
 */
import assert from "node:assert/strict";
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
});
