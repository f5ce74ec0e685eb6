/**
 * Supabase's database roles (issue 12 item 4), on real PostgreSQL: a fresh database set up the way
 * a Supabase project is, where the service's `postgres` is no superuser. Here that role is a LOGIN
 * role of its own (unique per run): NOSUPERUSER, BYPASSRLS, a member of anon, authenticated and
 * service_role, owner of the database. pgcrypto is already installed in the `extensions` schema
 * (not public, and not on anyone's search_path here), `auth` and `auth.uid()` belong to
 * `supabase_auth_admin`, and new tables, functions and sequences in public are granted to the API
 * roles by default, as Supabase's default privileges do. The migrations run AS that role, then the
 * whole flow (sign-in with a real viem-signed proof, PUT, GET, reveal, DELETE, logout, key
 * rotation) with the service connected as it.
 *
 * Postgres only: skipped, saying so, without DATABASE_URL.
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { openDatabase } from "../server/database.ts";
import { createKeyring } from "../functions/_shared/vault/vault-crypto.ts";
import { rotateKeys } from "../scripts/lib/key-rotation.ts";
import {
  addCredential,
  listCredentials,
  revokeCredential,
  rotateCredential,
} from "../server/live-run-credentials.ts";
import { migrate, readMigrations } from "../server/migrations.ts";
import { appOn, bearer, signIn, type TestApp } from "./support/app.ts";

const adminUrl = Deno.env.get("DATABASE_URL");
if (!adminUrl) {
  console.warn(
    "supabase roles test skipped: set DATABASE_URL to a PostgreSQL server where this user may " +
      "create roles and databases (e.g. postgres://postgres@127.0.0.1:5432/test)",
  );
}

/** Creates a cluster-wide role unless it exists (concurrent runs may race to create it). */
const createRoleIfMissing = (name: string, options: string) => `
  do $$
  begin
    if not exists (select 1 from pg_roles where rolname = '${name}') then
      create role ${name} ${options};
    end if;
  exception when duplicate_object or unique_violation then null;
  end
  $$;`;

/** What a Supabase project holds before any migration of ours, set up by the superuser. */
function supabaseLikeSetup(owner: string): string {
  return `
    create schema extensions;
    create extension pgcrypto with schema extensions;
    grant usage on schema extensions to anon, authenticated, service_role, ${owner};

    create schema auth authorization supabase_auth_admin;
    grant usage on schema auth to anon, authenticated, service_role, ${owner};
    -- Supabase's own definition, owned by the auth service's role.
    create function auth.uid() returns uuid
      language sql stable
      as $fn$
        select coalesce(
          nullif(current_setting('request.jwt.claim.sub', true), ''),
          (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub')
        )::uuid
      $fn$;
    alter function auth.uid() owner to supabase_auth_admin;
    grant execute on function auth.uid() to anon, authenticated, service_role, ${owner};

    -- Supabase grants whatever its postgres role creates in public to the API roles.
    alter default privileges for role ${owner} in schema public
      grant all on tables to anon, authenticated, service_role;
    alter default privileges for role ${owner} in schema public
      grant all on functions to anon, authenticated, service_role;
    alter default privileges for role ${owner} in schema public
      grant all on sequences to anon, authenticated, service_role;`;
}

const PGTAP_DIR = new URL("../supabase/tests/database/", import.meta.url);

/** pg_prove on the PATH and the pgtap extension on the server (tests/pgtap_test.ts says why not). */
async function pgProveReady(sql: postgres.Sql): Promise<boolean> {
  try {
    await new Deno.Command("pg_prove", { args: ["--version"], stdout: "null", stderr: "null" })
      .output();
  } catch {
    return false;
  }
  return (await sql`select 1 from pg_available_extensions where name = 'pgtap'`).length > 0;
}

function send(app: TestApp, method: string, path: string, token: string, body?: unknown) {
  const headers = bearer(token, { "content-type": "application/json" });
  if (path.endsWith("/reveal")) headers["x-service-server-secret"] = app.config.serverRevealToken;
  return app.fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function ok(response: Promise<Response>) {
  const answered = await response;
  const text = await answered.text();
  assert.equal(answered.status, 200, text);
  return JSON.parse(text);
}

Deno.test({
  name: "migrations and the whole flow run as a Supabase-like postgres role (no superuser, " +
    "BYPASSRLS, pgcrypto in extensions, auth.uid() owned by supabase_auth_admin)",
  ignore: !adminUrl,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const suffix = crypto.randomUUID().replaceAll("-", "").slice(0, 12);
    const owner = `wv_supabase_postgres_${suffix}`;
    const database = `wv_supabase_roles_${suffix}`;
    const admin = postgres(adminUrl!, { max: 1, onnotice: () => {} });
    const createdAuthAdmin = (await admin.unsafe(
      "select 1 from pg_roles where rolname = 'supabase_auth_admin'",
    )).length === 0;

    await admin.unsafe(createRoleIfMissing("anon", "nologin noinherit"));
    await admin.unsafe(createRoleIfMissing("authenticated", "nologin noinherit"));
    await admin.unsafe(createRoleIfMissing("service_role", "nologin noinherit bypassrls"));
    await admin.unsafe(createRoleIfMissing("supabase_auth_admin", "nologin noinherit"));
    await admin.unsafe(
      `create role ${owner} login nosuperuser nocreaterole nocreatedb inherit bypassrls`,
    );
    await admin.unsafe(`grant anon, authenticated, service_role to ${owner}`);
    await admin.unsafe(`create database ${database} owner ${owner}`);

    const superUrl = new URL(adminUrl!);
    superUrl.pathname = `/${database}`;
    const ownerUrl = new URL(superUrl);
    ownerUrl.username = owner;
    ownerUrl.password = "";
    const setup = postgres(superUrl.toString(), { max: 1, onnotice: () => {} });
    const db = await openDatabase({
      engine: "postgres",
      url: ownerUrl.toString(),
      maxConnections: 4,
      prepare: true,
      queryTimeoutMs: 10_000,
    });
    try {
      await setup.unsafe(supabaseLikeSetup(owner));

      await t.step("the service's role is no superuser but bypasses RLS", async () => {
        const [role] = await db.query<{ rolsuper: boolean; rolbypassrls: boolean }>(
          "select rolsuper, rolbypassrls from pg_roles where rolname = current_user",
        );
        assert.deepEqual(role, { rolsuper: false, rolbypassrls: true });
      });

      await t.step("every migration applies as that role, and again changes nothing", async () => {
        const applied = await migrate(db);
        assert.equal(applied.length, (await readMigrations()).length);
        assert.deepEqual(await migrate(db), []);
        // Supabase's own objects were used as they were, not replaced or duplicated.
        const [uid] = await db.query<{ owner: string; count: number }>(
          `select min(pg_get_userbyid(p.proowner)) as owner, count(*)::int as count
             from pg_proc p join pg_namespace n on n.oid = p.pronamespace
            where n.nspname = 'auth' and p.proname = 'uid'`,
        );
        assert.deepEqual(uid, { owner: "supabase_auth_admin", count: 1 });
        const [pgcrypto] = await db.query<{ schema: string }>(
          `select n.nspname as schema from pg_extension e
             join pg_namespace n on n.oid = e.extnamespace where e.extname = 'pgcrypto'`,
        );
        assert.equal(pgcrypto.schema, "extensions");
        const [tables] = await db.query<{ owner: string }>(
          "select tableowner as owner from pg_tables where schemaname = 'public' and tablename = 'user_secrets'",
        );
        assert.equal(tables.owner, owner);
      });

      await t.step(
        "Supabase's default grants are taken back where the API roles need none",
        async () => {
          const [grants] = await db.query<Record<string, boolean>>(
            `select
             has_function_privilege('anon', 'public.sign_in_with_nonce(text, text, bytea, integer, text, integer, integer, bigint, bigint, text)', 'execute') as anon_sign_in,
             has_function_privilege('authenticated', 'public.sign_in_with_nonce(text, text, bytea, integer, text, integer, integer, bigint, bigint, text)', 'execute') as authenticated_sign_in,
             has_function_privilege('authenticated', 'public.hit_rate_limit(text, integer)', 'execute') as authenticated_rate_limit,
             has_function_privilege('authenticated', 'public.put_user_secret(uuid, uuid, text, bytea, bytea, text, text, text, integer, integer)', 'execute') as authenticated_put,
             has_function_privilege('authenticated', 'public.reveal_user_secrets(uuid, uuid, text[], text, text, integer, text, integer, integer, bytea, boolean, integer)', 'execute') as authenticated_reveal,
             has_table_privilege('authenticated', 'public.live_run_credentials', 'select') as authenticated_credentials,
             has_table_privilege('anon', 'public.live_run_credentials', 'select') as anon_credentials,
             has_table_privilege('authenticated', 'public.user_secrets', 'insert') as authenticated_insert,
             has_table_privilege('authenticated', 'public.user_secrets', 'update') as authenticated_update,
             has_table_privilege('anon', 'public.user_secrets', 'select') as anon_select,
             has_table_privilege('authenticated', 'public.auth_sessions', 'select') as authenticated_sessions,
             has_sequence_privilege('authenticated', pg_get_serial_sequence('public.secret_events', 'id'), 'usage') as authenticated_sequence,
             has_table_privilege('authenticated', 'public.user_secrets', 'select') as authenticated_select,
             has_column_privilege('authenticated', 'public.user_secrets', 'hint', 'select') as authenticated_select_hint,
             has_column_privilege('authenticated', 'public.user_secrets', 'ciphertext', 'select') as authenticated_select_ciphertext,
             has_function_privilege('authenticated', 'public.admit_contract_check(text, text, bigint, text, text, integer, text, integer, integer, text, integer, integer)', 'execute') as authenticated_contract_check,
             has_function_privilege('service_role', 'public.put_user_secret(uuid, uuid, text, bytea, bytea, text, text, text, integer, integer)', 'execute') as service_put`,
          );
          assert.deepEqual(grants, {
            anon_sign_in: false,
            authenticated_sign_in: false,
            authenticated_rate_limit: false,
            authenticated_put: false,
            authenticated_reveal: false,
            authenticated_credentials: false,
            anon_credentials: false,
            authenticated_insert: false,
            authenticated_update: false,
            anon_select: false,
            authenticated_sessions: false,
            authenticated_sequence: false,
            authenticated_select: false,
            authenticated_select_hint: true,
            authenticated_select_ciphertext: false,
            authenticated_contract_check: false,
            service_put: true,
          });
        },
      );

      const app = appOn(db, {}, ownerUrl.toString());

      await t.step(
        "sign-in, PUT, GET, reveal, DELETE and logout work with the service as that role",
        async () => {
          const creator = await signIn(app);
          const token = creator.accessToken;
          const value = `sk-supabase-${crypto.randomUUID()}`;
          assert.equal(
            (await ok(send(app, "PUT", "/api/secrets", token, {
              secretType: "provider_b_key",
              value,
            }))).created,
            true,
          );
          await ok(send(app, "PUT", "/api/secrets", token, {
            secretType: "provider_a_org_id",
            value: "org-7",
          }));
          const listed = await ok(send(app, "GET", "/api/secrets", token));
          assert.deepEqual(
            listed.secrets.map((
              s: { secretType: string; hint?: string },
            ) => [s.secretType, s.hint]),
            [["provider_a_org_id", undefined], ["provider_b_key", `…${value.slice(-4)}`]],
          );
          const revealed = await ok(send(app, "POST", "/api/secrets/reveal", token, {}));
          assert.deepEqual(
            revealed.secrets.map((
              s: { secretType: string; value: string },
            ) => [s.secretType, s.value]),
            [["provider_a_org_id", "org-7"], ["provider_b_key", value]],
          );
          assert.deepEqual(
            await ok(
              send(app, "DELETE", "/api/secrets", token, { secretType: "provider_a_org_id" }),
            ),
            { secretType: "provider_a_org_id", deleted: true },
          );
          const missing = await send(app, "DELETE", "/api/secrets", token, {
            secretType: "provider_a_org_id",
          });
          assert.equal(missing.status, 404);
          assert.equal((await missing.json()).error.code, "secret_not_found");
          const trail = await db.query<{ action: string; secret_types: string[] }>(
            "select action, secret_types from public.secret_events where user_id = $1 order by id",
            [creator.userId],
          );
          assert.deepEqual(trail.map((e) => [e.action, e.secret_types.length]), [
            ["put", 1],
            ["put", 1],
            ["reveal", 2],
            ["delete", 1],
          ]);

          const logout = await app.fetch("/api/auth/logout", {
            method: "POST",
            headers: bearer(token),
          });
          assert.equal(logout.status, 204);
          const ended = await send(app, "GET", "/api/secrets", token);
          assert.equal(ended.status, 401);
          assert.equal((await ended.json()).error.code, "session_revoked");
        },
      );

      await t.step("key rotation runs as that role through service_role", async () => {
        const creator = await signIn(app);
        const value = `sk-rotate-${crypto.randomUUID()}`;
        await ok(send(app, "PUT", "/api/secrets", creator.accessToken, {
          secretType: "provider_c_key",
          value,
        }));
        const [k1] = app.config.encryptionKeys;
        const k2 = { id: "k2", key: crypto.getRandomValues(new Uint8Array(32)) };
        const report = await rotateKeys(db, createKeyring([k2, k1]));
        assert.equal(report.rotated, 2, "the remaining row of each creator");
        assert.deepEqual(report.rowsByKeyId, { k2: 2 });
      });

      await t.step(
        "live-run credentials are managed as that role through service_role, and reveal in scope",
        async () => {
          const creator = await signIn(app);
          const value = `sk-credential-${crypto.randomUUID()}`;
          await ok(send(app, "PUT", "/api/secrets", creator.accessToken, {
            secretType: "provider_b_key",
            value,
          }));
          const { credential } = await addCredential(db, "image-worker", ["provider_b_key"], null);
          const rotation = await rotateCredential(db, "image-worker", 60);
          for (const presented of [credential, rotation.credential]) {
            const revealed = await ok(app.fetch("/api/secrets/reveal", {
              method: "POST",
              headers: bearer(creator.accessToken, {
                "content-type": "application/json",
                "x-service-server-secret": presented,
              }),
              body: JSON.stringify({ secretTypes: ["provider_b_key"] }),
            }));
            assert.equal(revealed.secrets[0].value, value);
          }
          assert.equal(await revokeCredential(db, "image-worker"), 2);
          assert.deepEqual(
            (await listCredentials(db)).map((listed) => listed.status),
            ["revoked", "revoked"],
          );
        },
      );

      await t.step(
        "creator controls run as that role: lock, refused reveal, unlock, sessions, delete",
        async () => {
          const creator = await signIn(app);
          const token = creator.accessToken;
          await ok(send(app, "PUT", "/api/secrets", token, {
            secretType: "provider_b_key",
            value: `sk-controls-${crypto.randomUUID()}`,
          }));
          await ok(send(app, "POST", "/api/secrets/lock", token));
          const refused = await send(app, "POST", "/api/secrets/reveal", token, {});
          assert.equal(refused.status, 423);
          assert.equal((await refused.json()).error.code, "vault_locked");
          /** The message of a fresh nonce for `purpose`, signed by the creator's wallet. */
          const signed = async (purpose: string) => {
            const { message } = await ok(
              send(app, "POST", "/api/auth/confirm/nonce", token, { purpose }),
            );
            return { message, signature: await creator.account.signMessage({ message }) };
          };
          await ok(send(app, "POST", "/api/secrets/unlock", token, await signed("unlock")));
          await ok(send(app, "POST", "/api/secrets/reveal", token, {}));
          const { sessions } = await ok(send(app, "GET", "/api/auth/sessions", token));
          assert.deepEqual(sessions.map((s: { current: boolean }) => s.current), [true]);
          const { events } = await ok(send(app, "GET", "/api/secrets/activity", token));
          assert.deepEqual(events.map((e: { kind: string }) => e.kind), [
            "revealed",
            "unlocked",
            "reveal_refused",
            "locked",
            "saved",
          ]);
          await ok(send(app, "GET", "/api/account/export", token));
          assert.deepEqual(
            await ok(send(app, "DELETE", "/api/account", token, await signed("delete_account"))),
            { deleted: true },
          );
          const [kept] = await db.query<{ n: number }>(
            "select count(*)::int as n from public.secret_events where user_id = $1",
            [creator.userId],
          );
          assert.equal(kept.n, 6, "the trail outlives the account, the deletion last");
        },
      );

      await t.step({
        name: "the pgTAP files pass with pg_prove connected as that role (as `supabase test db`)",
        ignore: !(await pgProveReady(setup)),
        async fn() {
          await setup.unsafe(`
            create extension if not exists pgtap with schema extensions;
            alter database ${database} set search_path = "$user", public, extensions;`);
          const files = (await Array.fromAsync(Deno.readDir(PGTAP_DIR)))
            .filter((entry) => entry.name.endsWith(".test.sql"))
            .map((entry) => new URL(entry.name, PGTAP_DIR).pathname).sort();
          const args = ["-h", ownerUrl.hostname, "-U", owner, "-d", database, ...files];
          if (ownerUrl.port) args.splice(2, 0, "-p", ownerUrl.port);
          const { code, stdout, stderr } = await new Deno.Command("pg_prove", { args }).output();
          const output = new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
          assert.equal(code, 0, output);
          assert.match(output, /Result: PASS/, output);
        },
      });
    } finally {
      await db.close();
      await setup.end();
      await admin.unsafe(`drop database if exists ${database} with (force)`);
      await admin.unsafe(`drop role if exists ${owner}`);
      if (createdAuthAdmin) {
        // Only when this run made it, and only if no other run uses it by now.
        await admin.unsafe("drop role if exists supabase_auth_admin").catch(() => {});
      }
      await admin.end();
    }
  },
});
