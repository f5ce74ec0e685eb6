-- Row-level security of the vault: anon sees nothing; a creator reaches only its own rows and
-- events, only while the session its claims name is live (not revoked, not expired, its own);
-- and authenticated writes nothing, not even its own rows.
begin;
create extension if not exists pgtap with schema extensions;
select plan(26);

-- Two creators; Alice with a live, a revoked and an expired session, Bob with a live one.
insert into public.wallet_users (id, wallet_address) values
  ('a0000000-0000-4000-8000-000000000001', '0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'),
  ('b0000000-0000-4000-8000-000000000001', '0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb');
insert into public.auth_sessions (id, user_id, expires_at, revoked_at, revoked_reason) values
  ('a0000000-0000-4000-8000-0000000000a1', 'a0000000-0000-4000-8000-000000000001',
    now() + interval '1 hour', null, null),
  ('a0000000-0000-4000-8000-0000000000a2', 'a0000000-0000-4000-8000-000000000001',
    now() + interval '1 hour', now(), 'logout'),
  ('a0000000-0000-4000-8000-0000000000a3', 'a0000000-0000-4000-8000-000000000001',
    now() - interval '1 minute', null, null),
  ('b0000000-0000-4000-8000-0000000000b1', 'b0000000-0000-4000-8000-000000000001',
    now() + interval '1 hour', null, null);
insert into public.user_secrets (user_id, secret_type, ciphertext, iv, key_id) values
  ('a0000000-0000-4000-8000-000000000001', 'provider_b_key', '\x0101010101010101010101010101010101'::bytea, '\x000000000000000000000000'::bytea, 'k1'),
  ('b0000000-0000-4000-8000-000000000001', 'provider_b_key', '\x0202020202020202020202020202020202'::bytea, '\x000000000000000000000000'::bytea, 'k1'),
  ('b0000000-0000-4000-8000-000000000001', 'provider_c_key', '\x0303030303030303030303030303030303'::bytea, '\x000000000000000000000000'::bytea, 'k1');

-- anon: every table refuses it outright.
set local role anon;
select throws_ok($$ select * from public.user_secrets $$, '42501', null,
  'anon cannot read user_secrets');
select throws_ok($$ select * from public.secret_events $$, '42501', null,
  'anon cannot read secret_events');
select throws_ok($$ select * from public.wallet_users $$, '42501', null,
  'anon cannot read wallet_users');
select throws_ok($$ select * from public.auth_sessions $$, '42501', null,
  'anon cannot read auth_sessions');
select throws_ok(
  $$ insert into public.user_secrets (user_id, secret_type, ciphertext, iv, key_id)
     values ('a0000000-0000-4000-8000-000000000001', 'provider_d_key',
       '\x0404040404040404040404040404040404'::bytea, '\x000000000000000000000000'::bytea, 'k1') $$,
  '42501', null, 'anon cannot write user_secrets');
reset role;

-- Alice, live session: her own rows and events only.
set local request.jwt.claims to
  '{"sub":"a0000000-0000-4000-8000-000000000001","role":"authenticated","session_id":"a0000000-0000-4000-8000-0000000000a1"}';
set local role authenticated;
select results_eq($$ select user_id::text, secret_type from public.user_secrets $$,
  $$ values ('a0000000-0000-4000-8000-000000000001', 'provider_b_key') $$,
  'a creator with a live session sees only its own vault rows');
select results_eq($$ select user_id::text, action from public.secret_events $$,
  $$ values ('a0000000-0000-4000-8000-000000000001', 'put') $$,
  'a creator with a live session sees only its own audit events');
select is_empty(
  $$ select 1 from public.user_secrets where user_id = 'b0000000-0000-4000-8000-000000000001' $$,
  'asking for another creator''s rows by id returns nothing');
select throws_ok(
  $$ update public.user_secrets set hint = '…0000'
      where user_id = 'a0000000-0000-4000-8000-000000000001' $$,
  '42501', null, 'authenticated cannot update even its own vault row');
select throws_ok(
  $$ update public.user_secrets set ciphertext = '\x0505050505050505050505050505050505'::bytea $$,
  '42501', null, 'authenticated cannot update vault ciphertexts');
select throws_ok(
  $$ delete from public.user_secrets where user_id = 'a0000000-0000-4000-8000-000000000001' $$,
  '42501', null, 'authenticated cannot delete even its own vault row');
select throws_ok(
  $$ insert into public.user_secrets (user_id, secret_type, ciphertext, iv, key_id)
     values ('a0000000-0000-4000-8000-000000000001', 'provider_d_key',
       '\x0404040404040404040404040404040404'::bytea, '\x000000000000000000000000'::bytea, 'k1') $$,
  '42501', null, 'authenticated cannot insert a vault row, not even in its own name');
select throws_ok(
  $$ insert into public.secret_events (user_id, secret_types, action)
     values ('a0000000-0000-4000-8000-000000000001', array['provider_b_key'], 'reveal') $$,
  '42501', null, 'authenticated cannot write audit events');
select throws_ok($$ select * from public.auth_sessions $$, '42501', null,
  'authenticated cannot read sessions');
select throws_ok($$ select * from public.auth_refresh_tokens $$, '42501', null,
  'authenticated cannot read refresh tokens');
select throws_ok($$ select * from public.wallet_users $$, '42501', null,
  'authenticated cannot read the wallet-to-user mapping');
select throws_ok($$ select * from public.rate_limit_windows $$, '42501', null,
  'authenticated cannot read rate-limit counters');
select throws_ok($$ select * from public.auth_nonces $$, '42501', null,
  'authenticated cannot read nonces');
reset role;

-- Alice's claims naming a revoked session, an expired one, Bob's, or none: nothing.
set local request.jwt.claims to
  '{"sub":"a0000000-0000-4000-8000-000000000001","role":"authenticated","session_id":"a0000000-0000-4000-8000-0000000000a2"}';
set local role authenticated;
select is_empty($$ select 1 from public.user_secrets $$,
  'a revoked session''s claims see no vault row');
select is_empty($$ select 1 from public.secret_events $$,
  'a revoked session''s claims see no audit event');
select throws_ok(
  $$ update public.user_secrets set ciphertext = '\x0505050505050505050505050505050505'::bytea $$,
  '42501', null, 'a revoked session''s claims cannot update vault rows');
select throws_ok($$ delete from public.user_secrets $$,
  '42501', null, 'a revoked session''s claims cannot delete vault rows');
reset role;

set local request.jwt.claims to
  '{"sub":"a0000000-0000-4000-8000-000000000001","role":"authenticated","session_id":"a0000000-0000-4000-8000-0000000000a3"}';
set local role authenticated;
select is_empty($$ select 1 from public.user_secrets $$,
  'an expired session''s claims see no vault row');
reset role;

set local request.jwt.claims to
  '{"sub":"a0000000-0000-4000-8000-000000000001","role":"authenticated","session_id":"b0000000-0000-4000-8000-0000000000b1"}';
set local role authenticated;
select is_empty($$ select 1 from public.user_secrets $$,
  'claims naming another creator''s live session see no vault row');
reset role;

set local request.jwt.claims to
  '{"sub":"a0000000-0000-4000-8000-000000000001","role":"authenticated"}';
set local role authenticated;
select is_empty($$ select 1 from public.user_secrets $$,
  'claims without a session id see no vault row');
reset role;

-- Revoking the live session takes effect at once.
update public.auth_sessions set revoked_at = now(), revoked_reason = 'logout'
 where id = 'a0000000-0000-4000-8000-0000000000a1';
set local request.jwt.claims to
  '{"sub":"a0000000-0000-4000-8000-000000000001","role":"authenticated","session_id":"a0000000-0000-4000-8000-0000000000a1"}';
set local role authenticated;
select is_empty($$ select 1 from public.user_secrets $$,
  'once its session is revoked, the same claims see nothing');
reset role;

select * from finish();
rollback;
