/**
 * Through PgBouncer in transaction mode, as Supabase advises serverless clients to connect: the
 * driver sends no startup parameter the pooler refuses, prepares nothing, applies its statement
 * timeout inside each transaction, and a creator's role and claims never outlive the transaction
 * that set them on a shared server connection.
 */
import assert from "node:assert/strict";
import { parseConfig } from "../functions/_shared/config/config.ts";
import { openPostgres } from "../functions/_shared/db/postgres.ts";
import { listSecrets } from "../functions/user-secrets/vault-store.ts";
import { testEnv } from "./support/app.ts";
import { openTestDatabase } from "./support/database.ts";
import { findPgBouncer, startPgBouncer } from "./support/pgbouncer.ts";

const lookup = await findPgBouncer();
if ("missing" in lookup) console.warn(`skipping the PgBouncer tests: ${lookup.missing}`);

Deno.test({
  name: "through a transaction pooler",
  ignore: "missing" in lookup,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    if (!("found" in lookup)) return;
    const database = await openTestDatabase("postgres");
    // One server connection for every client: whatever one transaction leaves behind, the next
    // client's transaction would see.
    const pooler = await startPgBouncer(lookup.found, { poolSize: 1 });
    const dbName = new URL(database.url!).pathname.slice(1);
    const settings = parseConfig(testEnv({ DATABASE_URL: pooler.urlFor(dbName) })).database;
    assert.equal(settings.engine, "postgres");
    const creatorClient = openPostgres(
      settings as Extract<typeof settings, { engine: "postgres" }>,
    );
    const nextClient = openPostgres(settings as Extract<typeof settings, { engine: "postgres" }>);
    try {
      await t.step("a pooler URL turns prepared statements off and drops the hint", () => {
        assert.equal(settings.engine === "postgres" && settings.prepare, false);
        assert.equal(settings.engine === "postgres" && settings.url.includes("pgbouncer"), false);
      });

      await t.step(
        "the driver connects and the statement timeout holds inside each query",
        async () => {
          const timeoutMs = settings.engine === "postgres" ? settings.queryTimeoutMs : 0;
          const [row] = await creatorClient.query<{ timeout: string; as_set: boolean }>(
            `select current_setting('statement_timeout') as timeout,
                  current_setting('statement_timeout')::interval = $1::int * interval '1 ms' as as_set`,
            [timeoutMs],
          );
          assert.equal(row.as_set, true, `statement_timeout was ${row.timeout}`);
        },
      );

      await t.step(
        "a creator's role and claims never reach the next client's transaction",
        async () => {
          const session = {
            userId: crypto.randomUUID(),
            sessionId: crypto.randomUUID(),
            walletAddress: "0x0000000000000000000000000000000000000001",
            expiresAt: Math.floor(Date.now() / 1000) + 60,
            claims: {
              sub: crypto.randomUUID(),
              role: "authenticated" as const,
              session_id: crypto.randomUUID(),
            },
          };
          // The session is not live: the list's check refuses it before switching role. The
          // batch below then sets a role and claims on the shared server connection itself.
          await assert.rejects(
            listSecrets(creatorClient, session),
            (error: { code?: string }) => error.code === "session_revoked",
          );
          await creatorClient.batch([
            {
              text:
                "select set_config('request.jwt.claims', $1, true), set_config('role', 'authenticated', true)",
              params: [JSON.stringify(session.claims)],
            },
            { text: "select auth.uid()" },
          ]);
          const [seen] = await nextClient.query<
            { role: string; claims: string | null; timeout: string }
          >(
            `select current_user as role, current_setting('request.jwt.claims', true) as claims,
                  current_setting('statement_timeout') as timeout`,
          );
          assert.notEqual(seen.role, "authenticated");
          assert.notEqual(seen.role, "anon");
          assert.ok(seen.claims === null || seen.claims === "", `claims leaked: ${seen.claims}`);
        },
      );

      await t.step("nor does an aborted transaction's", async () => {
        const outcomes = await creatorClient.batch([
          { text: "select set_config('role', 'authenticated', true)" },
          { text: "select 1 / 0" },
        ]);
        assert.equal(outcomes[1].status, "rejected");
        const [seen] = await nextClient.query<{ role: string }>("select current_user as role");
        assert.notEqual(seen.role, "authenticated");
      });

      await t.step("more clients than server connections all get answers", async () => {
        const answers = await Promise.all(
          Array.from(
            { length: 20 },
            (_, i) =>
              (i % 2 === 0 ? creatorClient : nextClient).query<{ n: number }>(
                "select $1::int as n",
                [i],
              ),
          ),
        );
        assert.deepEqual(answers.map(([row]) => row.n), Array.from({ length: 20 }, (_, i) => i));
      });
    } finally {
      await creatorClient.close();
      await nextClient.close();
      await pooler.stop();
      await database.close();
    }
  },
});
