/**
 * The vault's statements keep their plans when the service connects as a role that owns none of
 * the functions (a least-privilege login role beside the migrations' owner): a PL/pgSQL plan that
 * reads a table under row-level security belongs to the role it was made as, and a function called
 * both as the service's role and, through a security definer function, as the owner would be
 * planned again at every switch: the live-session check twice a GET, the rate-limit counter
 * whenever a connection goes from a sign-in to a PUT or back (so both are security definer:
 * supabase/migrations/*_identity_and_sessions.sql, *_rate_limits.sql); and the counter's sweep,
 * which as a SQL function was planned again at every call (*_sweep_keeps_its_plans.sql). Counted
 * with Postgres's own debug_print_plan, which reports each planning to the client: no timing
 * involved.
 *
 * Postgres only: skipped, saying so, without DATABASE_URL.
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { SECRET_TYPES } from "../protocol/secret-types.ts";
import { createFreshPostgres } from "./support/fresh-postgres.ts";

const adminUrl = Deno.env.get("DATABASE_URL");
if (!adminUrl) {
  console.warn("plan reuse test skipped: set DATABASE_URL to a PostgreSQL server");
}

Deno.test({
  name: "GET, PUT, the rate-limit counter and its sweep plan nothing again, after their first " +
    "calls, as a service role that owns no function",
  ignore: !adminUrl,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const fresh = await createFreshPostgres(adminUrl!, {
      namePrefix: "wallet_vault_plans_",
      maxConnections: 1,
      queryTimeoutMs: 30_000,
    });
    const role = `wv_service_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
    const admin = postgres(adminUrl!, { max: 1, onnotice: () => {} });
    let service: postgres.Sql | null = null;
    try {
      // As Supabase's postgres is to service_role: bypasses row-level security, may act as the API
      // roles; here it owns nothing (the migrations ran as the superuser).
      await admin.unsafe(`create role ${role} login bypassrls`);
      await admin.unsafe(`grant authenticated, service_role to ${role}`);

      const [{ id: userId }] = await fresh.db.query<{ id: string }>(
        `insert into public.wallet_users (wallet_address) values ('0x${"a".repeat(40)}')
         returning id`,
      );
      const [{ id: sessionId }] = await fresh.db.query<{ id: string }>(
        `insert into public.auth_sessions (user_id, expires_at)
         values ($1, now() + interval '1 hour') returning id`,
        [userId],
      );
      await fresh.db.query(
        `insert into public.user_secrets (user_id, secret_type, ciphertext, iv, key_id)
         values ($1, 'provider_b_key', $2, $3, 'k1')`,
        [userId, new Uint8Array(48), new Uint8Array(12)],
      );

      const plannings: string[] = [];
      const url = new URL(fresh.url);
      url.username = role;
      url.password = "";
      service = postgres(url.toString(), {
        max: 1,
        onnotice: (notice) => plannings.push(String(notice.message)),
      });
      // Generic plans only, so that any planning seen is a cached plan thrown away.
      await service.unsafe("set plan_cache_mode = force_generic_plan");
      const claims = JSON.stringify({
        sub: userId,
        role: "authenticated",
        session_id: sessionId,
        wallet_address: `0x${"a".repeat(40)}`,
      });
      const list = async () => {
        const rows = await service!.unsafe(
          `select live, secret_type from public.list_user_secrets($1, $2, $3, $4::text[])`,
          [claims, sessionId, userId, [...SECRET_TYPES]],
          { prepare: true },
        );
        assert.deepEqual(rows.map((row) => [row.live, row.secret_type]), [
          [true, "provider_b_key"],
        ]);
      };
      // A sign-in's counter, as the service counts it directly, and a PUT, whose security definer
      // function counts as the owner: public.hit_rate_limit is called both ways.
      const count = () =>
        service!.unsafe("select hits from public.hit_rate_limit($1, $2)", ["test:ip", 60], {
          prepare: true,
        });
      const put = async () => {
        const [row] = await service!.unsafe(
          `select outcome from public.put_user_secret($1, $2, 'provider_b_key', $3, $4, 'k1',
             null, 'vault:write:', 1000000, 60)`,
          [sessionId, userId, new Uint8Array(48), new Uint8Array(12)],
          { prepare: true },
        );
        assert.equal(row.outcome, "stored");
      };
      const calls = async () => {
        for (let call = 0; call < 3; call++) {
          await list();
          await count();
          await put();
        }
      };
      // A count that sweeps (one in a hundred): random() from a seed whose next value is under
      // 0.01. A stale window is put in its way each time, so its removal shows the sweep ran.
      const sweepingSeed = await seedWhoseFirstRandomIsUnder(admin, 0.01);
      const sweepingCount = async () => {
        await fresh.db.query(
          `insert into public.rate_limit_windows (bucket, window_start)
           values ('test:stale', now() - interval '2 hours')`,
        );
        await service!.unsafe("select setseed($1)", [sweepingSeed], { prepare: true });
        await count();
        const stale = await fresh.db.query(
          "select 1 from public.rate_limit_windows where bucket = 'test:stale'",
        );
        assert.equal(stale.length, 0, "the sweep did not run");
      };
      // Otherwise the sweep must not run: random() from a seed whose next values are all at
      // least 0.01.
      const quiet = () => service!.unsafe("select setseed($1)", [0.5], { prepare: true });
      await sweepingCount();
      await quiet();
      await calls(); // plans made once, here
      await service.unsafe("set client_min_messages = log");
      await service.unsafe("set debug_print_plan = on");
      await sweepingCount();
      await sweepingCount();
      await quiet();
      await calls();
      assert.deepEqual(plannings, [], "a plan was made again");
    } finally {
      await service?.end();
      await fresh.drop();
      await admin.unsafe(`drop role if exists ${role}`);
      await admin.end();
    }
  },
});

/** A seed after which a session's first random() is under `bound`: seeds are tried in order. */
async function seedWhoseFirstRandomIsUnder(sql: postgres.Sql, bound: number): Promise<number> {
  for (let step = 1; step < 10_000; step++) {
    const seed = step / 10_000;
    await sql.unsafe("select setseed($1)", [seed]);
    const [{ value }] = await sql.unsafe("select random() as value");
    if (value < bound) return seed;
  }
  throw new Error(`no seed gives a first random() under ${bound}`);
}
