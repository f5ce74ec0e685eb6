/**
 * The sweep that every rate-limit count runs now and then (public.sweep_expired_rows) never waits
 * for a row another transaction holds. When it waited, two requests that each count twice (an IP,
 * then an address) could wait on each other, and Postgres ended one with a deadlock (a 500).
 *
 * Needs two transactions at once, so real Postgres only (DATABASE_URL); PGlite has one connection.
 * What the sweep deletes is tested in supabase/tests/database/05_rate_limits.test.sql.
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { openTestDatabase } from "./support/database.ts";

const adminUrl = Deno.env.get("DATABASE_URL");
if (!adminUrl) console.warn("tests/rate_limit_sweep_test.ts skipped: set DATABASE_URL");

/** With this seed, the next random() is below 0.01: the counter's next call sweeps. */
const SWEEPING_SEED = -0.9971;

Deno.test({
  name: "a sweep skips the stale rows another transaction holds, and takes the rest",
  ignore: !adminUrl,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const database = await openTestDatabase("postgres");
    const holder = postgres(database.url!, { max: 1, onnotice: () => {} });
    const counter = postgres(database.url!, { max: 1, onnotice: () => {} });
    try {
      await holder`insert into public.rate_limit_windows (bucket, window_start, hits)
                   values ('test:held', now() - interval '2 hours', 1),
                          ('test:free', now() - interval '2 hours', 1)`;
      const [seed] = await counter`select setseed(${SWEEPING_SEED}), random() < 0.01 as sweeps`;
      assert.equal(seed.sweeps, true, "the seed no longer makes the next call sweep");

      const held = Promise.withResolvers<void>();
      const release = Promise.withResolvers<void>();
      const holding = holder.begin(async (tx) => {
        await tx`select 1 from public.rate_limit_windows where bucket = 'test:held' for update`;
        held.resolve();
        await release.promise;
      });
      await held.promise;
      try {
        const counted = await counter.begin(async (tx) => {
          // Waiting would show as this error; the old sweep waited for the holder for ever.
          await tx`set local lock_timeout = '2s'`;
          await tx`select setseed(${SWEEPING_SEED})`;
          return await tx`select hits from public.hit_rate_limit('test:count', 60)`;
        });
        assert.equal(counted[0].hits, 1);
      } finally {
        release.resolve();
        await holding;
      }
      const left = await holder`select bucket from public.rate_limit_windows
                                 where bucket like 'test:%' order by bucket`;
      assert.deepEqual(left.map((row) => row.bucket), ["test:count", "test:held"]);
    } finally {
      await holder.end();
      await counter.end();
      await database.close();
    }
  },
});
