/**
 * The schema and its row-level security, on both engines: a creator's transaction reaches only its
 * own vault rows and events, the API roles reach nothing else, and migrations apply once.
 */
import assert from "node:assert/strict";
import { asCreator, type Database } from "../functions/_shared/db.ts";
import { migrate, readMigrations } from "../server/migrations.ts";
import { describeWithDatabase } from "./support/suite.ts";

async function createUser(db: Database, hex: string): Promise<string> {
  const [row] = await db.query<{ id: string }>(
    "insert into public.wallet_users (wallet_address) values ($1) returning id",
    [`0x${hex.repeat(40).slice(0, 40)}`],
  );
  return row.id;
}

async function storeRaw(db: Database, userId: string, secretType: string): Promise<void> {
  await db.query(
    `insert into public.user_secrets (user_id, secret_type, ciphertext, iv, key_id)
     values ($1, $2, $3, $4, 'k1')`,
    [userId, secretType, new Uint8Array(32).fill(7), new Uint8Array(12).fill(1)],
  );
}

const claimsOf = (sub: string) => ({ sub, role: "authenticated" as const });

/** Runs one statement as `role` (anon or authenticated) and returns its rows or its error code. */
async function attempt(
  db: Database,
  role: "anon" | "authenticated",
  sql: string,
  sub?: string,
): Promise<{ rows?: unknown[]; error?: string }> {
  try {
    return await db.transaction(async (tx) => {
      await tx.query(
        "select set_config('request.jwt.claims', $1, true), set_config('role', $2, true)",
        [JSON.stringify(sub ? { sub, role } : { role }), role],
      );
      return { rows: await tx.query(sql) };
    });
  } catch (error) {
    return { error: (error as { code?: string }).code ?? "unknown" };
  }
}

const INSUFFICIENT_PRIVILEGE = "42501";

describeWithDatabase("schema and row-level security", {
  async "a creator sees only its own secrets"({ database: { db } }) {
    const alice = await createUser(db, "a");
    const bob = await createUser(db, "b");
    await storeRaw(db, alice, "provider_b_key");
    await storeRaw(db, bob, "provider_b_key");
    await storeRaw(db, bob, "provider_c_key");
    const seen = await asCreator(db, claimsOf(alice), (tx) =>
      // Deliberately no where clause: RLS alone must filter.
      tx.query<{ user_id: string }>("select user_id from public.user_secrets"));
    assert.deepEqual(seen.map((r) => r.user_id), [alice]);
  },

  async "a creator can neither change nor delete another creator's rows"({ database: { db } }) {
    const [bob] = await db.query<{ id: string }>(
      "select id from public.wallet_users where wallet_address = $1",
      [`0x${"b".repeat(40)}`],
    );
    const [alice] = await db.query<{ id: string }>(
      "select id from public.wallet_users where wallet_address = $1",
      [`0x${"a".repeat(40)}`],
    );
    const changed = await asCreator(
      db,
      claimsOf(alice.id),
      (tx) => tx.query("update public.user_secrets set key_id = 'stolen' returning secret_type"),
    );
    assert.equal(changed.length, 1, "only Alice's own row is updatable");
    const deleted = await asCreator(
      db,
      claimsOf(alice.id),
      (tx) =>
        tx.query("delete from public.user_secrets where user_id = $1 returning secret_type", [
          bob.id,
        ]),
    );
    assert.equal(deleted.length, 0);
    const [{ count }] = await db.query<{ count: number }>(
      "select count(*)::int as count from public.user_secrets where user_id = $1 and key_id = 'k1'",
      [bob.id],
    );
    assert.equal(count, 2, "Bob's rows are untouched");
  },

  async "a creator cannot write a row in another creator's name"({ database: { db } }) {
    const alice = await createUser(db, "c");
    const bob = await createUser(db, "d");
    await assert.rejects(
      asCreator(db, claimsOf(alice), (tx) =>
        tx.query(
          `insert into public.user_secrets (user_id, secret_type, ciphertext, iv, key_id)
           values ($1, 'provider_e_key', $2, $3, 'k1')`,
          [bob, new Uint8Array(32), new Uint8Array(12)],
        )),
      (error: { code?: string }) => error.code === INSUFFICIENT_PRIVILEGE,
    );
  },

  async "a creator reads only its own audit events and cannot forge them"({ database: { db } }) {
    const alice = await createUser(db, "e");
    const bob = await createUser(db, "f");
    await storeRaw(db, alice, "provider_d_key");
    await storeRaw(db, bob, "provider_d_key");
    const events = await asCreator(
      db,
      claimsOf(alice),
      (tx) =>
        tx.query<{ user_id: string; action: string }>(
          "select user_id, action from public.secret_events",
        ),
    );
    assert.deepEqual(events, [{ user_id: alice, action: "put" }]);
    const forged = await attempt(
      db,
      "authenticated",
      `insert into public.secret_events (user_id, secret_type, action) values ('${bob}', 'x', 'put')`,
      alice,
    );
    assert.equal(forged.error, INSUFFICIENT_PRIVILEGE);
  },

  async "the reveal audit function records only for the calling creator"({ database: { db } }) {
    const alice = await createUser(db, "1");
    await asCreator(
      db,
      claimsOf(alice),
      (tx) =>
        tx.query("select public.record_secret_reveal($1::text[])", [[
          "provider_b_key",
          "provider_c_key",
        ]]),
    );
    const rows = await db.query<{ user_id: string; secret_type: string }>(
      "select user_id, secret_type from public.secret_events where action = 'reveal' order by secret_type",
    );
    assert.deepEqual(rows, [
      { user_id: alice, secret_type: "provider_b_key" },
      { user_id: alice, secret_type: "provider_c_key" },
    ]);
  },

  async "anon reaches no table at all"({ database: { db } }) {
    for (
      const table of [
        "wallet_users",
        "auth_nonces",
        "auth_sessions",
        "auth_refresh_tokens",
        "rate_limit_windows",
        "user_secrets",
        "secret_events",
      ]
    ) {
      const result = await attempt(db, "anon", `select * from public.${table}`);
      assert.equal(result.error, INSUFFICIENT_PRIVILEGE, `anon must not read ${table}`);
    }
  },

  async "authenticated cannot read nonces, sessions, refresh tokens, limits or the user mapping"(
    { database: { db } },
  ) {
    const alice = await createUser(db, "2");
    for (
      const table of [
        "wallet_users",
        "auth_nonces",
        "auth_sessions",
        "auth_refresh_tokens",
        "rate_limit_windows",
      ]
    ) {
      for (const sql of [`select * from public.${table}`, `delete from public.${table}`]) {
        const result = await attempt(db, "authenticated", sql, alice);
        assert.equal(result.error, INSUFFICIENT_PRIVILEGE, `authenticated: ${sql}`);
      }
    }
  },

  async "neither API role can call the sign-in or rate-limit functions"({ database: { db } }) {
    const carol = await createUser(db, "5");
    const calls = [
      "select * from public.hit_rate_limit('proof:ip:127.0.0.1', 60)",
      `select * from public.sign_in_with_nonce('AAAAAAAAAAAAAAAA', '0x${"3".repeat(40)}',
         '\\x${"00".repeat(32)}'::bytea, 3600, 1000, 60)`,
    ];
    for (const sql of calls) {
      for (const role of ["anon", "authenticated"] as const) {
        const result = await attempt(db, role, sql, role === "authenticated" ? carol : undefined);
        assert.equal(result.error, INSUFFICIENT_PRIVILEGE, `${role}: ${sql}`);
      }
    }
    // The service's own connection can: an unknown nonce is reported, nothing is created.
    const [outcome] = await db.query<{ outcome: string; session_id: string | null }>(
      `select outcome, session_id from (${calls[1]}) as result`,
    );
    assert.deepEqual(outcome, { outcome: "nonce_unknown", session_id: null });
  },

  async "row-level security is enabled and forced on every table"({ database: { db } }) {
    const tables = await db.query<{ relname: string; rls: boolean; forced: boolean }>(
      `select c.relname, c.relrowsecurity as rls, c.relforcerowsecurity as forced
         from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'public' and c.relkind = 'r' order by c.relname`,
    );
    assert.equal(tables.length, 7);
    for (const table of tables) {
      assert.ok(table.rls && table.forced, `${table.relname} must force RLS`);
    }
  },

  async "the vault has no plaintext column and constrains secret types and addresses"(
    { database: { db } },
  ) {
    const columns = await db.query<{ column_name: string }>(
      `select column_name from information_schema.columns
        where table_schema = 'public' and table_name = 'user_secrets' order by ordinal_position`,
    );
    assert.deepEqual(columns.map((c) => c.column_name), [
      "user_id",
      "secret_type",
      "ciphertext",
      "iv",
      "key_id",
      "hint",
      "created_at",
      "updated_at",
    ]);
    const alice = await createUser(db, "3");
    await assert.rejects(
      storeRaw(db, alice, "provider_z_key"),
      (e: { code?: string }) => e.code === "23514",
    );
    await assert.rejects(
      db.query("insert into public.wallet_users (wallet_address) values ($1)", [
        "0xABCDEFabcdefABCDEFabcdefABCDEFabcdefABCD",
      ]),
      (e: { code?: string }) => e.code === "23514",
      "addresses are stored lowercase only",
    );
  },

  async "pgcrypto is enabled and auth.uid() reads the creator's claims"({ database: { db } }) {
    const [{ digest }] = await db.query<{ digest: string }>(
      "select encode(digest('x', 'sha256'), 'hex') as digest",
    );
    assert.equal(digest.length, 64);
    const sub = crypto.randomUUID();
    const [{ uid }] = await asCreator(
      db,
      claimsOf(sub),
      (tx) => tx.query<{ uid: string }>("select auth.uid() as uid"),
    );
    assert.equal(uid, sub);
  },

  async "applying the migrations again changes nothing"({ database: { db } }) {
    assert.deepEqual(await migrate(db), []);
    const [{ count }] = await db.query<{ count: number }>(
      "select count(*)::int as count from supabase_migrations.schema_migrations",
    );
    assert.equal(count, (await readMigrations()).length);
  },
});
