/**
 * The schema and its row-level security, on both engines: a creator's transaction reaches only its
 * own vault rows and events, the API roles reach nothing else, and migrations apply once.
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import type { Database } from "../functions/_shared/db/db.ts";
import { openDatabase } from "../server/database.ts";
import { asCreator, type CreatorClaims } from "./support/as-creator.ts";
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

type SessionState = "live" | "revoked" | "expired";

/** A session row for `userId`, in the given state; returns its id. */
async function createSession(
  db: Database,
  userId: string,
  state: SessionState = "live",
): Promise<string> {
  const [row] = await db.query<{ id: string }>(
    `insert into public.auth_sessions (user_id, expires_at, revoked_at, revoked_reason)
     values ($1,
       now() + case when $2 = 'expired' then interval '-1 minute' else interval '1 hour' end,
       case when $2 = 'revoked' then now() end,
       case when $2 = 'revoked' then 'logout' end)
     returning id`,
    [userId, state],
  );
  return row.id;
}

/** The claims a session's access token carries (sub, role, session_id). */
const claimsOf = (sub: string, sessionId?: string): CreatorClaims => ({
  sub,
  role: "authenticated",
  ...(sessionId === undefined ? {} : { session_id: sessionId }),
});

/** A creator with a live session: its user id and its session's claims. */
async function creatorWithSession(db: Database, hex: string) {
  const id = await createUser(db, hex);
  return { id, claims: claimsOf(id, await createSession(db, id)) };
}

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
  async "a creator with a live session sees only its own secrets"({ database: { db } }) {
    const alice = await creatorWithSession(db, "a");
    const bob = await creatorWithSession(db, "b");
    await storeRaw(db, alice.id, "provider_b_key");
    await storeRaw(db, bob.id, "provider_b_key");
    await storeRaw(db, bob.id, "provider_c_key");
    const seen = await asCreator(db, alice.claims, (tx) =>
      // Deliberately no where clause: RLS alone must filter.
      tx.query<{ user_id: string }>("select user_id from public.user_secrets"));
    assert.deepEqual(seen.map((r) => r.user_id), [alice.id]);
    // Its own rows' masked columns, never their ciphertext, IV or key id (nor all columns at once).
    const masked = await asCreator(
      db,
      alice.claims,
      (tx) => tx.query("select secret_type, hint, created_at, updated_at from public.user_secrets"),
    );
    assert.equal(masked.length, 1);
    for (const sealed of ["ciphertext", "iv", "key_id", "*"]) {
      await assert.rejects(
        asCreator(db, alice.claims, (tx) => tx.query(`select ${sealed} from public.user_secrets`)),
        (e: { code?: string }) => e.code === "42501",
        sealed,
      );
    }
  },

  async "authenticated can neither change, delete nor insert vault rows, its own included"(
    { database: { db } },
  ) {
    const [alice, bob] = await db.query<{ id: string }>(
      "select id from public.wallet_users where wallet_address = any($1) order by wallet_address",
      [[`0x${"a".repeat(40)}`, `0x${"b".repeat(40)}`]],
    );
    const [{ id: session }] = await db.query<{ id: string }>(
      "select id from public.auth_sessions where user_id = $1",
      [alice.id],
    );
    const writes: [string, unknown[]][] = [
      ["update public.user_secrets set key_id = 'stolen' where user_id = $1", [alice.id]],
      ["update public.user_secrets set hint = '…0000', ciphertext = ciphertext", []],
      ["delete from public.user_secrets where user_id = $1", [alice.id]],
      ["delete from public.user_secrets where user_id = $1", [bob.id]],
      [
        `insert into public.user_secrets (user_id, secret_type, ciphertext, iv, key_id)
           values ($1, 'provider_e_key', $2, $3, 'k1')`,
        [alice.id, new Uint8Array(32), new Uint8Array(12)],
      ],
      [
        `insert into public.user_secrets (user_id, secret_type, ciphertext, iv, key_id)
           values ($1, 'provider_e_key', $2, $3, 'k1')`,
        [bob.id, new Uint8Array(32), new Uint8Array(12)],
      ],
    ];
    for (const [sql, params] of writes) {
      await assert.rejects(
        asCreator(db, claimsOf(alice.id, session), (tx) => tx.query(sql, params)),
        (error: { code?: string }) => error.code === INSUFFICIENT_PRIVILEGE,
        sql,
      );
    }
    const [{ count }] = await db.query<{ count: number }>(
      "select count(*)::int as count from public.user_secrets where key_id = 'k1' and hint is null",
    );
    assert.equal(count, 3, "every row is untouched");
  },

  async "a creator reads only its own audit events and cannot forge them"({ database: { db } }) {
    const alice = await creatorWithSession(db, "e");
    const bob = await creatorWithSession(db, "f");
    await storeRaw(db, alice.id, "provider_d_key");
    await storeRaw(db, bob.id, "provider_d_key");
    const events = await asCreator(
      db,
      alice.claims,
      (tx) =>
        tx.query<{ user_id: string; action: string }>(
          "select user_id, action from public.secret_events",
        ),
    );
    assert.deepEqual(events, [{ user_id: alice.id, action: "put" }]);
    const forged = await attempt(
      db,
      "authenticated",
      `insert into public.secret_events (user_id, secret_types, action)
         values ('${bob.id}', array['x'], 'put')`,
      alice.id,
    );
    assert.equal(forged.error, INSUFFICIENT_PRIVILEGE);
  },

  async "claims of a revoked, expired, missing or another creator's session see no row"(
    { database: { db } },
  ) {
    const dana = await createUser(db, "9");
    const erin = await creatorWithSession(db, "8");
    await storeRaw(db, dana, "provider_a_api_key");
    const live = await createSession(db, dana);
    const cases: [string, CreatorClaims][] = [
      ["revoked", claimsOf(dana, await createSession(db, dana, "revoked"))],
      ["expired", claimsOf(dana, await createSession(db, dana, "expired"))],
      ["no session_id", claimsOf(dana)],
      ["an unknown session", claimsOf(dana, crypto.randomUUID())],
      ["a malformed session id", claimsOf(dana, "not-a-uuid")],
      ["another creator's session", claimsOf(dana, erin.claims.session_id)],
    ];
    for (const [label, claims] of cases) {
      for (const table of ["user_secrets", "secret_events"]) {
        const rows = await asCreator(
          db,
          claims,
          (tx) => tx.query(`select 1 from public.${table} where user_id = $1`, [dana]),
        );
        assert.deepEqual(rows, [], `${label}: ${table}`);
      }
      for (
        const sql of [
          "update public.user_secrets set hint = '…0000', ciphertext = $2 where user_id = $1",
          "delete from public.user_secrets where user_id = $1 and $2::bytea is not null",
        ]
      ) {
        await assert.rejects(
          asCreator(db, claims, (tx) => tx.query(sql, [dana, new Uint8Array(32)])),
          (error: { code?: string }) => error.code === INSUFFICIENT_PRIVILEGE,
          `${label}: ${sql}`,
        );
      }
    }
    const [untouched] = await db.query<{ hint: string | null }>(
      "select hint from public.user_secrets where user_id = $1",
      [dana],
    );
    assert.deepEqual(untouched, { hint: null }, "the row is as it was");
    // The same rows with the live session: the policy, not the data, made the difference.
    for (const table of ["user_secrets", "secret_events"]) {
      const rows = await asCreator(
        db,
        claimsOf(dana, live),
        (tx) => tx.query(`select 1 from public.${table} where user_id = $1`, [dana]),
      );
      assert.equal(rows.length, 1, table);
    }
    // And once that session is revoked, its claims see nothing either.
    await db.query("update public.auth_sessions set revoked_at = now() where id = $1", [live]);
    const after = await asCreator(
      db,
      claimsOf(dana, live),
      (tx) => tx.query("select 1 from public.user_secrets"),
    );
    assert.deepEqual(after, []);
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
         '\\x${"00".repeat(32)}'::bytea, 3600, 'proof:address:', 1000, 60)`,
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

  async "neither API role can execute the vault's write, reveal or failure functions"(
    { database: { db } },
  ) {
    const frank = await creatorWithSession(db, "6");
    const session = frank.claims.session_id;
    const calls = [
      `select * from public.put_user_secret('${session}', '${frank.id}', 'provider_b_key',
         '\\x${"00".repeat(32)}'::bytea, '\\x${"00".repeat(12)}'::bytea, 'k1', null,
         'vault:write:', 100, 60)`,
      `select * from public.delete_user_secret('${session}', '${frank.id}', 'provider_b_key',
         'vault:write:', 100, 60)`,
      `select * from public.reveal_user_secrets('${session}', '${frank.id}',
         array['provider_b_key'], 'bucket', 'vault:reveal:user:', 100, 'vault:reveal:token:', 100,
         60)`,
      `select public.record_reveal_failure('${session}', '${frank.id}', array['provider_b_key'], 1)`,
    ];
    for (const sql of calls) {
      for (const role of ["anon", "authenticated"] as const) {
        const result = await attempt(
          db,
          role,
          sql,
          role === "authenticated" ? frank.id : undefined,
        );
        assert.equal(result.error, INSUFFICIENT_PRIVILEGE, `${role}: ${sql}`);
      }
    }
    const events = await db.query("select 1 from public.secret_events where user_id = $1", [
      frank.id,
    ]);
    assert.deepEqual(events, [], "nothing was written");
    // session_is_live_from_claims() is what authenticated's policies call, so it is executable by it alone.
    assert.equal(
      (await attempt(db, "anon", "select public.session_is_live_from_claims()")).error,
      INSUFFICIENT_PRIVILEGE,
    );
    const asFrank = await asCreator(
      db,
      frank.claims,
      (tx) => tx.query<{ live: boolean }>("select public.session_is_live_from_claims() as live"),
    );
    assert.deepEqual(asFrank, [{ live: true }]);
  },

  async "the vault functions refuse an ended session and then write and count nothing"(
    { database: { db } },
  ) {
    const gina = await createUser(db, "7");
    await storeRaw(db, gina, "provider_c_key");
    for (const state of ["revoked", "expired"] as const) {
      const session = await createSession(db, gina, state);
      const [put] = await db.query<{ outcome: string }>(
        `select outcome from public.put_user_secret($1, $2, 'provider_b_key', $3, $4, 'k1', null,
           'vault:write:', 100, 60)`,
        [session, gina, new Uint8Array(32), new Uint8Array(12)],
      );
      const [removed] = await db.query<{ outcome: string }>(
        `select outcome from public.delete_user_secret($1, $2, 'provider_c_key', 'vault:write:',
         100, 60)`,
        [session, gina],
      );
      const revealed = await db.query<{ outcome: string; ciphertext: Uint8Array | null }>(
        `select outcome, ciphertext from public.reveal_user_secrets($1, $2,
           array['provider_c_key'], 'bucket', 'vault:reveal:user:', 100, 'vault:reveal:token:', 100,
           60)`,
        [session, gina],
      );
      assert.deepEqual(
        [put.outcome, removed.outcome, revealed],
        ["session_revoked", "session_revoked", [{ outcome: "session_revoked", ciphertext: null }]],
        state,
      );
    }
    // A live session of another creator is no key to Gina's rows either.
    const other = await creatorWithSession(db, "4");
    const [mismatch] = await db.query<{ outcome: string }>(
      `select outcome from public.delete_user_secret($1, $2, 'provider_c_key', 'vault:write:',
         100, 60)`,
      [other.claims.session_id, gina],
    );
    assert.equal(mismatch.outcome, "session_revoked");
    const rows = await db.query<{ secret_type: string }>(
      "select secret_type from public.user_secrets where user_id = $1",
      [gina],
    );
    assert.deepEqual(rows, [{ secret_type: "provider_c_key" }]);
    const trail = await db.query<{ action: string }>(
      "select action from public.secret_events where user_id = $1 order by id",
      [gina],
    );
    assert.deepEqual(trail, [{ action: "put" }], "only the seeding insert");
    const counted = await db.query(
      "select 1 from public.rate_limit_windows where bucket like $1",
      [`vault:%${gina}`],
    );
    assert.deepEqual(counted, []);
  },

  async "the list reads a live session's rows, and tells an ended session from nothing stored"(
    { database: { db } },
  ) {
    const hana = await createUser(db, "c");
    const ivo = await createUser(db, "d"); // stores nothing
    await storeRaw(db, hana, "provider_e_key");
    await storeRaw(db, hana, "provider_a_api_key");
    const list = (userId: string, sessionId: string) =>
      db.transaction(async (tx) => {
        const rows = await tx.query<{ live: boolean; secret_type: string | null }>(
          `select live, secret_type from public.list_user_secrets($1, $2, $3,
             array['provider_a_api_key', 'provider_e_key'])`,
          [JSON.stringify(claimsOf(userId, sessionId)), sessionId, userId],
        );
        // Whatever the path, the transaction is left in a role: the creator's after a read that
        // found rows, the caller's after the check that told why nothing was read.
        const [{ role }] = await tx.query<{ role: string }>("select current_user as role");
        return { rows: rows.map((row) => [row.live, row.secret_type]), role };
      });
    const [{ caller }] = await db.query<{ caller: string }>("select current_user as caller");
    assert.deepEqual(await list(hana, await createSession(db, hana)), {
      rows: [[true, "provider_a_api_key"], [true, "provider_e_key"]],
      role: "authenticated",
    });
    assert.deepEqual(await list(ivo, await createSession(db, ivo)), { rows: [], role: caller });
    for (const state of ["revoked", "expired"] as const) {
      for (const userId of [hana, ivo]) {
        assert.deepEqual(
          await list(userId, await createSession(db, userId, state)),
          { rows: [[false, null]], role: caller },
          `${state}, ${userId === hana ? "rows stored" : "nothing stored"}`,
        );
      }
    }
    // Another creator's live session is not Hana's.
    const [{ rows }] = [await list(hana, await createSession(db, ivo))];
    assert.deepEqual(rows, [[false, null]]);
  },

  async "a reveal counts the creator, then the token only while the creator is within its limit"(
    { database: { db } },
  ) {
    const { id: jan, claims } = await creatorWithSession(db, "0");
    await storeRaw(db, jan, "provider_b_key");
    const bucket = `test-${crypto.randomUUID()}`;
    const reveal = async (creatorLimit: number, tokenLimit: number) => {
      const [row] = await db.query<{ outcome: string; retry_after: number | null }>(
        `select outcome, retry_after from public.reveal_user_secrets($1, $2,
           array['provider_b_key'], $3, 'vault:reveal:user:', $4, 'vault:reveal:token:', $5, 60)`,
        [claims.session_id, jan, bucket, creatorLimit, tokenLimit],
      );
      return row;
    };
    const hits = async () =>
      Object.fromEntries(
        (await db.query<{ bucket: string; hits: number }>(
          `select bucket, hits from public.rate_limit_windows
            where bucket in ($1, $2) order by bucket`,
          [`vault:reveal:token:${bucket}`, `vault:reveal:user:${jan}`],
        )).map((row) => [row.bucket.split(":")[2], row.hits]),
      );
    // All in one one-minute window: not in the last two seconds of one.
    const intoMinute = (Date.now() / 1000) % 60;
    if (intoMinute > 58) await new Promise((resolve) => setTimeout(resolve, 2_500));
    const outcomes = [await reveal(1, 100), await reveal(1, 100), await reveal(1, 100)];
    assert.deepEqual(outcomes.map((row) => row.outcome), [
      "revealed",
      "rate_limited",
      "rate_limited",
    ]);
    for (const { retry_after } of outcomes.slice(1)) {
      assert.ok(retry_after !== null && retry_after >= 1 && retry_after <= 60, `${retry_after}`);
    }
    // Past its own limit, the creator spent none of the token's budget.
    assert.deepEqual(await hits(), { user: 3, token: 1 });
    // Past the token's limit: refused (told apart from the creator's own limit), both counted.
    assert.equal((await reveal(100, 1)).outcome, "credential_rate_limited");
    assert.deepEqual(await hits(), { user: 4, token: 2 });
  },

  async "row-level security is enabled and forced on every table"({ database: { db } }) {
    const tables = await db.query<{ relname: string; rls: boolean; forced: boolean }>(
      `select c.relname, c.relrowsecurity as rls, c.relforcerowsecurity as forced
         from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'public' and c.relkind = 'r' order by c.relname`,
    );
    assert.deepEqual(tables.map((table) => table.relname), [
      "auth_nonces",
      "auth_refresh_tokens",
      "auth_sessions",
      "live_run_credentials",
      "rate_limit_windows",
      "secret_events",
      "secret_last_reveals",
      "user_secrets",
      "wallet_users",
    ]);
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

Deno.test({
  name: "runners migrating one fresh database at once each finish, and each migration runs once",
  ignore: !Deno.env.get("DATABASE_URL"),
  async fn() {
    const adminUrl = Deno.env.get("DATABASE_URL")!;
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    const versions = (await readMigrations()).map((migration) => migration.version);
    try {
      // The race (the record table's "create if not exists") shows in some rounds, not all.
      for (let round = 0; round < 4; round++) {
        const name = `wallet_vault_migrate_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
        await admin.unsafe(`create database ${name}`);
        const url = new URL(adminUrl);
        url.pathname = `/${name}`;
        const runners = await Promise.all(
          [1, 2, 3].map(() =>
            openDatabase({
              engine: "postgres",
              url: url.toString(),
              maxConnections: 1,
              prepare: true,
              queryTimeoutMs: 30_000,
            })
          ),
        );
        try {
          const applied = await Promise.all(runners.map((db) => migrate(db)));
          assert.deepEqual(applied.flat().sort(), versions);
        } finally {
          await Promise.all(runners.map((db) => db.close()));
          await admin.unsafe(`drop database if exists ${name} with (force)`);
        }
      }
    } finally {
      await admin.end();
    }
  },
});
