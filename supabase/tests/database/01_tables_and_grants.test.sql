-- Row-level security and table grants of every table: RLS enabled and forced everywhere, `anon`
-- granted nothing, `authenticated` only SELECT on its audit events, on its vault rows' masked
-- columns (never the ciphertext, IV or key id) and on what its sessions list shows.
-- Runs unchanged with `supabase test db`, or `pg_prove -d <db> supabase/tests/database/*.test.sql`.
begin;
create extension if not exists pgtap with schema extensions;
select plan(21);

select tables_are(
  'public',
  array['auth_nonces', 'auth_refresh_tokens', 'auth_sessions', 'live_run_credentials',
    'rate_limit_windows', 'secret_events', 'secret_last_reveals', 'user_secrets', 'wallet_users'],
  'public holds exactly the service''s tables'
);

select is_empty(
  $$ select c.relname from pg_class c
      where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p')
        and not (c.relrowsecurity and c.relforcerowsecurity) $$,
  'row-level security is enabled and forced on every table'
);

select is_empty(
  $$ select c.relname from pg_class c
      where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p', 'v', 'm')
        and has_table_privilege('anon', c.oid,
          'select, insert, update, delete, truncate, references, trigger') $$,
  'anon is granted nothing on any table'
);

select is_empty(
  $$ select c.relname from pg_class c
      where c.relnamespace = 'public'::regnamespace and c.relkind = 'S'
        and (has_sequence_privilege('anon', c.oid, 'usage, select, update')
          or has_sequence_privilege('authenticated', c.oid, 'usage, select, update')) $$,
  'neither API role is granted any sequence'
);

select results_eq(
  $$ select c.relname::text collate "default", p.privilege
       from pg_class c,
            unnest(array['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES',
              'TRIGGER']) as p (privilege)
      where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p', 'v', 'm')
        and has_table_privilege('authenticated', c.oid, p.privilege)
      order by 1, 2 $$,
  $$ values ('secret_events', 'SELECT') $$,
  'authenticated may read its audit events whole, and write no table'
);
select results_eq(
  $$ select a.attname::text collate "default", p.privilege
       from pg_attribute a,
            unnest(array['SELECT', 'INSERT', 'UPDATE', 'REFERENCES']) as p (privilege)
      where a.attrelid = 'public.user_secrets'::regclass and a.attnum > 0
        and not a.attisdropped
        and has_column_privilege('authenticated', a.attrelid, a.attnum, p.privilege)
      order by a.attnum, 2 $$,
  $$ values ('user_id', 'SELECT'), ('secret_type', 'SELECT'), ('hint', 'SELECT'),
       ('created_at', 'SELECT'), ('updated_at', 'SELECT') $$,
  'of its vault rows, authenticated reads the masked columns only: no ciphertext, IV or key id'
);
select results_eq(
  $$ select a.attname::text collate "default", p.privilege
       from pg_attribute a,
            unnest(array['SELECT', 'INSERT', 'UPDATE', 'REFERENCES']) as p (privilege)
      where a.attrelid = 'public.auth_sessions'::regclass and a.attnum > 0
        and not a.attisdropped
        and has_column_privilege('authenticated', a.attrelid, a.attnum, p.privilege)
      order by a.attnum, 2 $$,
  $$ values ('id', 'SELECT'), ('user_id', 'SELECT'), ('created_at', 'SELECT'),
       ('expires_at', 'SELECT'), ('revoked_at', 'SELECT'), ('client_description', 'SELECT'),
       ('refreshed_at', 'SELECT') $$,
  'of its sessions, authenticated reads what the sessions list shows, not why one ended'
);

select policies_are('public', 'user_secrets', array['user_secrets_owner_read'],
  'user_secrets has only the owner''s read policy');
select policy_cmd_is('public', 'user_secrets', 'user_secrets_owner_read', 'select',
  'the vault policy covers SELECT only');
select policy_roles_are('public', 'user_secrets', 'user_secrets_owner_read',
  array['authenticated'], 'the vault policy applies to authenticated');
select results_eq(
  $$ select a.attname::text collate "default", p.privilege
       from pg_attribute a,
            unnest(array['SELECT', 'INSERT', 'UPDATE', 'REFERENCES']) as p (privilege)
      where a.attrelid = 'public.secret_last_reveals'::regclass and a.attnum > 0
        and not a.attisdropped
        and has_column_privilege('authenticated', a.attrelid, a.attnum, p.privilege)
      order by a.attnum, 2 $$,
  $$ values ('user_id', 'SELECT'), ('secret_type', 'SELECT'), ('revealed_at', 'SELECT'),
    ('credential_name', 'SELECT') $$,
  'of its keys'' last releases, authenticated reads when and by whom, not the event or the one before'
);
select policies_are('public', 'secret_last_reveals', array['secret_last_reveals_owner_read'],
  'secret_last_reveals has only the owner''s read policy');
select policy_cmd_is('public', 'secret_last_reveals', 'secret_last_reveals_owner_read', 'select',
  'the last-release policy covers SELECT only');
select policy_roles_are('public', 'secret_last_reveals', 'secret_last_reveals_owner_read',
  array['authenticated'], 'the last-release policy applies to authenticated');
select policies_are('public', 'secret_events', array['secret_events_owner_read'],
  'secret_events has only the owner''s read policy');
select policy_cmd_is('public', 'secret_events', 'secret_events_owner_read', 'select',
  'the audit policy covers SELECT only');
select policies_are('public', 'auth_sessions', array['auth_sessions_owner_read'],
  'auth_sessions has only the owner''s read policy');
select policy_cmd_is('public', 'auth_sessions', 'auth_sessions_owner_read', 'select',
  'the sessions policy covers SELECT only');
select policy_roles_are('public', 'auth_sessions', 'auth_sessions_owner_read',
  array['authenticated'], 'the sessions policy applies to authenticated');
select is_empty(
  $$ select tablename from pg_policies where schemaname = 'public'
      and tablename not in ('user_secrets', 'secret_events', 'secret_last_reveals',
        'auth_sessions') $$,
  'no other table has a policy: the API roles reach none of their rows'
);
select table_privs_are('public', 'user_secrets', 'service_role',
  array['DELETE', 'INSERT', 'REFERENCES', 'SELECT', 'TRIGGER', 'TRUNCATE', 'UPDATE'],
  'service_role keeps every privilege on user_secrets (key rotation)');

select * from finish();
rollback;
