-- Grants of every function of ours in public (an extension's, such as pgcrypto's where it lives in
-- public, are the extension's): neither API role can execute the sign-in, rate-limit or vault
-- functions; authenticated can execute session_is_live_from_claims(), which its policies call, and
-- auth_session_is_live(), the predicate it and list_creator_sessions use.
begin;
create extension if not exists pgtap with schema extensions;
select plan(22);

select results_eq(
  $$ select p.proname::text collate "default" from pg_proc p
      where p.pronamespace = 'public'::regnamespace
        and not exists (select 1 from pg_depend d
          where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')
      order by 1 $$,
  array['act_as_creator', 'admit_contract_check', 'audit_user_secret_change', 'auth_session_is_live',
    'creator_account', 'delete_account', 'delete_user_secret', 'expire_secret_events',
    'hit_rate_limit', 'issue_confirmation_nonce', 'issue_nonce', 'list_creator_sessions',
    'list_secret_events', 'list_user_secrets', 'lock_reveals', 'nonce_refusal', 'note_last_reveal',
    'note_session_refresh', 'put_user_secret', 'record_reveal_failure', 'refuse_reveal',
    'reveal_user_secrets', 'session_is_live_for', 'session_is_live_from_claims', 'sign_in_from_ip',
    'sign_in_with_nonce', 'sign_out_sessions', 'spend_confirmation', 'sweep_expired_rows',
    'unlock_reveals'],
  'public holds exactly these functions of ours'
);

select is_empty(
  $$ select p.oid::regprocedure::text from pg_proc p
      where p.pronamespace = 'public'::regnamespace
        and not exists (select 1 from pg_depend d
          where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')
        and has_function_privilege('anon', p.oid, 'execute') $$,
  'anon can execute none of our functions'
);

select results_eq(
  $$ select p.proname::text collate "default" from pg_proc p
      where p.pronamespace = 'public'::regnamespace
        and not exists (select 1 from pg_depend d
          where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')
        and has_function_privilege('authenticated', p.oid, 'execute') order by 1 $$,
  array['auth_session_is_live', 'session_is_live_from_claims'],
  'authenticated can execute the two live-session checks and none of our other functions'
);

select is_empty(
  $$ select p.proname from pg_proc p
      where p.pronamespace = 'public'::regnamespace and p.prosecdef
        and not exists (select 1 from unnest(p.proconfig) c where c like 'search_path=%') $$,
  'every security definer function pins its search_path'
);

select function_privs_are('public', 'put_user_secret',
  array['uuid', 'uuid', 'text', 'bytea', 'bytea', 'text', 'text', 'text', 'integer', 'integer'],
  'service_role', array['EXECUTE'], 'service_role can execute put_user_secret');
select function_privs_are('public', 'list_user_secrets', array['text', 'uuid', 'uuid', 'text[]'],
  'service_role', array['EXECUTE'], 'service_role can execute list_user_secrets');
select function_privs_are('public', 'act_as_creator', array['text'],
  'service_role', array['EXECUTE'], 'service_role can execute act_as_creator');
select function_privs_are('public', 'reveal_user_secrets',
  array['uuid', 'uuid', 'text[]', 'text', 'text', 'integer', 'text', 'integer', 'integer',
    'bytea', 'boolean', 'integer'],
  'service_role', array['EXECUTE'], 'service_role can execute reveal_user_secrets');

-- The same, as the roles themselves would try it.
set local role anon;
select throws_ok(
  $$ select * from public.sign_in_with_nonce('AAAAAAAAAAAAAAAA',
       '0x3333333333333333333333333333333333333333', '\x00'::bytea, 3600, 'proof:address:',
       10, 60) $$,
  '42501', null, 'anon cannot call sign_in_with_nonce');
select throws_ok($$ select * from public.hit_rate_limit('proof:ip:127.0.0.1', 60) $$,
  '42501', null, 'anon cannot call hit_rate_limit');
select throws_ok($$ select public.session_is_live_from_claims() $$,
  '42501', null, 'anon cannot call session_is_live');
select throws_ok(
  $$ select * from public.put_user_secret(gen_random_uuid(), gen_random_uuid(), 'provider_b_key',
       '\x00'::bytea, '\x00'::bytea, 'k1', null, 'vault:write:', 10, 60) $$,
  '42501', null, 'anon cannot call put_user_secret');
reset role;

set local request.jwt.claims to
  '{"sub":"a0000000-0000-4000-8000-000000000001","role":"authenticated","session_id":"a0000000-0000-4000-8000-0000000000a1"}';
set local role authenticated;
select throws_ok(
  $$ select * from public.sign_in_with_nonce('AAAAAAAAAAAAAAAA',
       '0x3333333333333333333333333333333333333333', '\x00'::bytea, 3600, 'proof:address:',
       10, 60) $$,
  '42501', null, 'authenticated cannot call sign_in_with_nonce');
select throws_ok($$ select * from public.hit_rate_limit('proof:ip:127.0.0.1', 60) $$,
  '42501', null, 'authenticated cannot call hit_rate_limit');
select throws_ok(
  $$ select * from public.put_user_secret('a0000000-0000-4000-8000-0000000000a1',
       'a0000000-0000-4000-8000-000000000001', 'provider_b_key', '\x00'::bytea, '\x00'::bytea,
       'k1', null, 'vault:write:', 10, 60) $$,
  '42501', null, 'authenticated cannot call put_user_secret');
select throws_ok(
  $$ select * from public.delete_user_secret('a0000000-0000-4000-8000-0000000000a1',
       'a0000000-0000-4000-8000-000000000001', 'provider_b_key', 'vault:write:', 10,
       60) $$,
  '42501', null, 'authenticated cannot call delete_user_secret');
select throws_ok(
  $$ select * from public.reveal_user_secrets('a0000000-0000-4000-8000-0000000000a1',
       'a0000000-0000-4000-8000-000000000001', array['provider_b_key'], 'bucket',
       'vault:reveal:user:', 10, 'vault:reveal:token:', 10, 60) $$,
  '42501', null, 'authenticated cannot call reveal_user_secrets');
select throws_ok(
  $$ select public.record_reveal_failure('a0000000-0000-4000-8000-0000000000a1',
       'a0000000-0000-4000-8000-000000000001', array['provider_b_key'], 1) $$,
  '42501', null, 'authenticated cannot call record_reveal_failure');
select throws_ok(
  $$ select * from public.list_user_secrets(current_setting('request.jwt.claims'),
       'a0000000-0000-4000-8000-0000000000a1', 'a0000000-0000-4000-8000-000000000001',
       array['provider_b_key']) $$,
  '42501', null, 'authenticated cannot call list_user_secrets');
select throws_ok($$ select public.audit_user_secret_change() $$,
  '42501', null, 'authenticated cannot call the audit trigger function');
select lives_ok($$ select public.session_is_live_from_claims() $$,
  'authenticated can call session_is_live (its policies do)');
select is(public.session_is_live_from_claims(), false, 'a session that does not exist is not live');
reset role;

select * from finish();
rollback;
