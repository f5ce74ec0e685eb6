/**
 * Database.send, on both engines: a statement started now whose `sent` tells a caller with
 * CPU-bound work (wallet-proof checking a signature) that the database already has it. On Postgres
 * the server is watched from another process (psql, synchronously) while this thread is held.
 */
import assert from "node:assert/strict";
import { openTestDatabase } from "./support/database.ts";
import { describeWithDatabase } from "./support/suite.ts";

/** How many statements holding `marker` the server is working on, asked from outside this process. */
function serverSees(url: string, marker: string): number {
  const { stdout, success } = new Deno.Command("psql", {
    args: [
      url,
      "-Atc",
      `select count(*) from pg_stat_activity where query like '%${marker}%' and pid <> pg_backend_pid()`,
    ],
    stdout: "piped",
    stderr: "null",
  }).outputSync();
  assert.ok(success, "psql could not ask the server");
  return Number(new TextDecoder().decode(stdout).trim());
}

describeWithDatabase("database send", {
  async "rows as query() gives them, and sent resolves"({ database: { db } }) {
    const { sent, rows } = db.send<{ echo: string }>("select $1::text as echo", ["hello"]);
    await sent;
    assert.deepEqual(await rows, [{ echo: "hello" }]);
  },

  async "a failing statement: rows rejects with its error, sent still resolves"(
    { database: { db } },
  ) {
    const { sent, rows } = db.send("select * from public.no_such_table");
    await sent;
    await assert.rejects(rows, (error: { code?: string }) => error.code === "42P01");
  },
});

Deno.test({
  name:
    "database send [postgres]: once sent, the statement is on the server while this thread is held",
  ignore: Deno.env.get("DATABASE_URL") === undefined, // PGlite runs in-process: nothing travels
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const database = await openTestDatabase("postgres");
    try {
      const marker = `send_probe_${crypto.randomUUID().replaceAll("-", "")}`;
      const { sent, rows } = database.db.send(`select pg_sleep(0.5), '${marker}' as probe`);
      await sent;
      // From here the thread does not return to the event loop (a stand-in for a signature
      // check): only a statement already handed to the socket can reach the server meanwhile.
      const until = Date.now() + 5_000;
      let seen = 0;
      while (seen === 0 && Date.now() < until) seen = serverSees(database.url!, marker);
      assert.equal(seen, 1, "the server did not receive the statement while the thread was busy");
      await rows;
    } finally {
      await database.close();
    }
  },
});
