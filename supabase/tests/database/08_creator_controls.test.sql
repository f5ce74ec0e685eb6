-- Creator controls: the columns they need; a creator's sessions readable by that creator alone,
-- under row-level security; a refresh noted on its session; saves told from replacements; the kill
-- switch folded into the reveal; a confirmation nonce spent only for its purpose, by its session
-- (and never by sign-in); the account deleted with its trail kept.
begin;
create extension if not exists pgtap with schema extensions;
select plan(43);

select has_column('public', 'auth_sessions', 'client_description', 'sessions keep a client description');
select has_column('public', 'auth_sessions', 'refreshed_at', 'sessions keep their last refresh');
select has_column('public', 'wallet_users', 'reveals_locked_at', 'creators keep a lock');
select has_column('public', 'auth_nonces', 'purpose', 'nonces may have a purpose');
select has_column('public', 'auth_nonces', 'session_id', 'a purpose nonce names its session');
select has_column('public', 'secret_events', 'reason', 'events may say why a reveal was refused');
select is_empty(
  $$ select 1 from pg_constraint
      where conrelid = 'public.secret_events'::regclass and contype = 'f' $$,
  'the audit trail has no foreign key: it outlives the account');

-- Alice with a live and a revoked session, Bob with a live one.
insert into public.wallet_users (id, wallet_address) values
  ('a1000000-0000-4000-8000-000000000001', '0xa1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1'),
  ('b1000000-0000-4000-8000-000000000001', '0xb1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1');
insert into public.auth_sessions (id, user_id, expires_at, revoked_at, revoked_reason,
    client_description) values
  ('a1000000-0000-4000-8000-0000000000a1', 'a1000000-0000-4000-8000-000000000001',
    now() + interval '1 hour', null, null, 'Firefox'),
  ('a1000000-0000-4000-8000-0000000000a2', 'a1000000-0000-4000-8000-000000000001',
    now() + interval '1 hour', now(), 'logout', null),
  ('b1000000-0000-4000-8000-0000000000b1', 'b1000000-0000-4000-8000-000000000001',
    now() + interval '1 hour', null, null, null);
insert into public.auth_refresh_tokens (token_hash, session_id) values
  (sha256('alice-refresh'::bytea), 'a1000000-0000-4000-8000-0000000000a1');

select throws_ok(
  $$ insert into public.auth_sessions (user_id, expires_at, client_description)
     values ('a1000000-0000-4000-8000-000000000001', now() + interval '1 hour', e'tab\there') $$,
  '23514', null, 'a client description holds printable ASCII only');
select throws_ok(
  $$ insert into public.auth_sessions (user_id, expires_at, client_description)
     values ('a1000000-0000-4000-8000-000000000001', now() + interval '1 hour', repeat('x', 161)) $$,
  '23514', null, 'a client description is at most 160 characters');

update public.auth_refresh_tokens set used_at = now() where token_hash = sha256('alice-refresh'::bytea);
select is(
  (select refreshed_at from public.auth_sessions where id = 'a1000000-0000-4000-8000-0000000000a1'),
  now(), 'spending a refresh token notes the refresh on its session');

-- Row-level security on sessions.
set local request.jwt.claims to
  '{"sub":"a1000000-0000-4000-8000-000000000001","role":"authenticated","session_id":"a1000000-0000-4000-8000-0000000000a1"}';
set local role authenticated;
select results_eq(
  $$ select id::text, client_description from public.auth_sessions order by id $$,
  $$ values ('a1000000-0000-4000-8000-0000000000a1', 'Firefox'),
            ('a1000000-0000-4000-8000-0000000000a2', null) $$,
  'a creator with a live session reads its own sessions only');
select is_empty(
  $$ select 1 from public.auth_sessions where id = 'b1000000-0000-4000-8000-0000000000b1' $$,
  'another creator''s session is out of reach by id');
select throws_ok($$ select revoked_reason from public.auth_sessions $$, '42501', null,
  'nor may it read why a session ended');
select throws_ok(
  $$ update public.auth_sessions set revoked_at = now()
      where id = 'b1000000-0000-4000-8000-0000000000b1' $$,
  '42501', null, 'authenticated ends no session itself');
reset role;
set local request.jwt.claims to
  '{"sub":"a1000000-0000-4000-8000-000000000001","role":"authenticated","session_id":"a1000000-0000-4000-8000-0000000000a2"}';
set local role authenticated;
select is_empty($$ select 1 from public.auth_sessions $$,
  'claims naming an ended session read no session');
reset role;
select results_eq(
  $$ select id::text from public.list_creator_sessions(
       '{"sub":"a1000000-0000-4000-8000-000000000001","role":"authenticated","session_id":"a1000000-0000-4000-8000-0000000000a1"}',
       'a1000000-0000-4000-8000-000000000001') $$,
  $$ values ('a1000000-0000-4000-8000-0000000000a1') $$,
  'list_creator_sessions lists the live ones');
reset role;

-- Saves, replacements and rotations.
insert into public.user_secrets (user_id, secret_type, ciphertext, iv, key_id) values
  ('a1000000-0000-4000-8000-000000000001', 'provider_b_key',
    '\x0101010101010101010101010101010101'::bytea, '\x000000000000000000000000'::bytea, 'k1');
update public.user_secrets set key_id = 'k2'
 where user_id = 'a1000000-0000-4000-8000-000000000001';
update public.user_secrets set updated_at = updated_at + interval '1 second'
 where user_id = 'a1000000-0000-4000-8000-000000000001';
select results_eq(
  $$ select action from public.secret_events
      where user_id = 'a1000000-0000-4000-8000-000000000001' order by id $$,
  $$ values ('put'), ('rotate'), ('replace') $$,
  'a first save is put, a re-encryption rotate, a save over it replace');

-- Last use: the latest reveal naming the type since its value was saved (updated_at is now + 1 s).
insert into public.secret_events (user_id, secret_types, action, occurred_at) values
  ('a1000000-0000-4000-8000-000000000001', array['provider_b_key'], 'reveal', now()),
  ('a1000000-0000-4000-8000-000000000001', array['provider_a_org_id', 'provider_b_key'], 'reveal',
    now() + interval '2 seconds'),
  ('a1000000-0000-4000-8000-000000000001', array['provider_a_org_id'], 'reveal',
    now() + interval '3 seconds'),
  ('b1000000-0000-4000-8000-000000000001', array['provider_b_key'], 'reveal',
    now() + interval '4 seconds');
select results_eq(
  $$ select secret_type, last_used_at from public.list_user_secrets(
       '{"sub":"a1000000-0000-4000-8000-000000000001","role":"authenticated","session_id":"a1000000-0000-4000-8000-0000000000a1"}',
       'a1000000-0000-4000-8000-0000000000a1', 'a1000000-0000-4000-8000-000000000001',
       array['provider_b_key']) $$,
  $$ values ('provider_b_key', now() + interval '2 seconds') $$,
  'last use is the latest reveal naming the type since the save, of this creator only');
reset role;

-- The kill switch, in the reveal's own statement.
select results_eq(
  $$ select outcome from public.lock_reveals('a1000000-0000-4000-8000-0000000000a1',
       'a1000000-0000-4000-8000-000000000001', 'vault:lock:', 10, 60) $$,
  $$ values ('locked') $$, 'a live session locks');
select results_eq(
  $$ select outcome, secret_type, ciphertext from public.reveal_user_secrets(
       'a1000000-0000-4000-8000-0000000000a1', 'a1000000-0000-4000-8000-000000000001',
       array['provider_b_key'], 'bucket', 'vault:reveal:user:', 10, 'vault:reveal:token:', 10,
       60) $$,
  $$ values ('vault_locked', null::text, null::bytea) $$,
  'a locked creator''s reveal reads nothing');
select results_eq(
  $$ select action, secret_types, reason from public.secret_events
      where user_id = 'a1000000-0000-4000-8000-000000000001' order by id desc limit 2 $$,
  $$ values ('reveal_refused', array['provider_b_key'], 'vault_locked'),
            ('lock', '{}'::text[], null) $$,
  'the lock and the refused reveal are in the trail');
select results_eq(
  $$ select outcome from public.reveal_user_secrets('a1000000-0000-4000-8000-0000000000a2',
       'a1000000-0000-4000-8000-000000000001', array['provider_b_key'], 'bucket',
       'vault:reveal:user:', 10, 'vault:reveal:token:', 10, 60) $$,
  $$ values ('session_revoked') $$, 'an ended session is refused before the lock is');
select results_eq(
  $$ select outcome from public.reveal_user_secrets('b1000000-0000-4000-8000-0000000000b1',
       'b1000000-0000-4000-8000-000000000001', array['provider_b_key'], 'bucket',
       'vault:reveal:user:', 10, 'vault:reveal:token:', 10, 60) $$,
  $$ select 'x' where false $$, 'another creator is not locked (nothing stored, no row)');
select results_eq(
  $$ select outcome from public.lock_reveals('a1000000-0000-4000-8000-0000000000a2',
       'a1000000-0000-4000-8000-000000000001', 'vault:lock:', 10, 60) $$,
  $$ values ('session_revoked') $$, 'an ended session cannot lock');

-- Confirmation nonces.
select results_eq(
  $$ select outcome, wallet_address, chain_id from public.issue_confirmation_nonce(
       'a1000000-0000-4000-8000-0000000000a1', 'a1000000-0000-4000-8000-000000000001', 'unlock',
       'UnlockNonce0000000000000000000001', 600, 1, 'nonce:ip:192.0.2.9', 10, 60) $$,
  $$ values ('issued', '0xa1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1', 1::bigint) $$,
  'a live session gets a nonce bound to its wallet and chain');
select results_eq(
  $$ select outcome from public.issue_confirmation_nonce(
       'a1000000-0000-4000-8000-0000000000a2', 'a1000000-0000-4000-8000-000000000001', 'unlock',
       'UnlockNonce0000000000000000000002', 600, 1, 'nonce:ip:192.0.2.9', 10, 60) $$,
  $$ values ('session_revoked') $$, 'an ended session gets none');
insert into public.auth_nonces (nonce, expires_at, address) values
  ('SignInNonce0000000000000000000001', now() + interval '10 minutes',
    '0xa1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1');
select results_eq(
  $$ select outcome from public.sign_in_from_ip(null, 10, 'UnlockNonce0000000000000000000001',
       '0xa1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1', sha256('never'::bytea), 3600,
       'proof:address:', 10, 60, 1, null) $$,
  $$ values ('nonce_purpose') $$, 'sign-in never spends a nonce issued for a purpose');
select results_eq(
  $$ select outcome from public.sign_in_with_nonce('UnlockNonce0000000000000000000001',
       '0xa1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1', sha256('never'::bytea), 3600,
       'proof:address:', 10, 60, 1, null) $$,
  $$ values ('nonce_purpose') $$, 'nor does its inner function');
select results_eq(
  $$ select outcome from public.unlock_reveals('a1000000-0000-4000-8000-0000000000a1',
       'a1000000-0000-4000-8000-000000000001', 'SignInNonce0000000000000000000001',
       '0xa1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1', 1, null, 'confirm:user:', 10, 60) $$,
  $$ values ('nonce_purpose') $$, 'an act never spends a sign-in nonce');
select results_eq(
  $$ select outcome from public.delete_account('a1000000-0000-4000-8000-0000000000a1',
       'a1000000-0000-4000-8000-000000000001', 'UnlockNonce0000000000000000000001',
       '0xa1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1', 1, null, 'confirm:user:', 10, 60) $$,
  $$ values ('nonce_purpose') $$, 'nor one issued for another act');
select results_eq(
  $$ select outcome from public.unlock_reveals('a1000000-0000-4000-8000-0000000000a1',
       'a1000000-0000-4000-8000-000000000001', 'UnlockNonce0000000000000000000001',
       '0xa1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1', 1, 1, 'confirm:user:', 10, 60) $$,
  $$ values ('identity_mismatch') $$, 'a contract''s signature does not confirm a key''s creator');
select results_eq(
  $$ select outcome from public.sign_out_sessions('b1000000-0000-4000-8000-0000000000b1',
       'b1000000-0000-4000-8000-000000000001', 'UnlockNonce0000000000000000000001',
       '0xb1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1', 1, null,
       array['a1000000-0000-4000-8000-0000000000a1'::uuid], 'confirm:user:', 10, 60) $$,
  $$ values ('session_not_found') $$, 'another creator''s session cannot be signed out');
select results_eq(
  $$ select outcome from public.unlock_reveals('a1000000-0000-4000-8000-0000000000a1',
       'a1000000-0000-4000-8000-000000000001', 'UnlockNonce0000000000000000000001',
       '0xa1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1', 1, null, 'confirm:user:', 10, 60) $$,
  $$ values ('unlocked') $$, 'the unlock nonce unlocks, from its session, for its wallet');
select results_eq(
  $$ select outcome from public.unlock_reveals('a1000000-0000-4000-8000-0000000000a1',
       'a1000000-0000-4000-8000-000000000001', 'UnlockNonce0000000000000000000001',
       '0xa1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1', 1, null, 'confirm:user:', 10, 60) $$,
  $$ values ('nonce_used') $$, 'once');
select is(
  (select reveals_locked_at from public.wallet_users
    where id = 'a1000000-0000-4000-8000-000000000001'),
  null, 'and the creator is unlocked');

-- Deleting the account: the trail and the nonce record stay, unlinked.
select results_eq(
  $$ select outcome from public.issue_confirmation_nonce(
       'a1000000-0000-4000-8000-0000000000a1', 'a1000000-0000-4000-8000-000000000001',
       'delete_account', 'DeleteNonce0000000000000000000001', 600, 1, 'nonce:ip:192.0.2.9', 10,
       60) $$,
  $$ values ('issued') $$, 'a nonce to delete the account');
select results_eq(
  $$ select outcome from public.delete_account('a1000000-0000-4000-8000-0000000000a1',
       'a1000000-0000-4000-8000-000000000001', 'DeleteNonce0000000000000000000001',
       '0xa1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1', 1, null, 'confirm:user:', 10, 60) $$,
  $$ values ('deleted') $$, 'deletes the account');
select is_empty(
  $$ select 1 from public.wallet_users where id = 'a1000000-0000-4000-8000-000000000001'
     union all
     select 1 from public.auth_sessions where user_id = 'a1000000-0000-4000-8000-000000000001'
     union all
     select 1 from public.user_secrets where user_id = 'a1000000-0000-4000-8000-000000000001' $$,
  'the wallet mapping, its sessions and its secrets are gone');
select results_eq(
  $$ select used_at is not null, used_by, address, session_id from public.auth_nonces
      where nonce in ('UnlockNonce0000000000000000000001', 'DeleteNonce0000000000000000000001') $$,
  $$ values (true, null::uuid, null::text, null::uuid), (true, null::uuid, null::text, null::uuid) $$,
  'its nonce uses stay recorded, unlinked');
select results_eq(
  $$ select action from public.secret_events
      where user_id = 'a1000000-0000-4000-8000-000000000001' order by id desc limit 2 $$,
  $$ values ('delete'), ('unlock') $$,
  'its trail stays, the secret''s deletion last');
select is(
  (select count(*)::integer from public.auth_sessions
    where user_id = 'b1000000-0000-4000-8000-000000000001' and revoked_at is null),
  1, 'another creator keeps its session');

-- Grants: the service's alone.
select function_privs_are('public', 'unlock_reveals',
  array['uuid', 'uuid', 'text', 'text', 'bigint', 'bigint', 'text', 'integer', 'integer'],
  'service_role', array['EXECUTE'], 'service_role can execute unlock_reveals');
set local request.jwt.claims to
  '{"sub":"b1000000-0000-4000-8000-000000000001","role":"authenticated","session_id":"b1000000-0000-4000-8000-0000000000b1"}';
set local role authenticated;
select throws_ok(
  $$ select * from public.lock_reveals('b1000000-0000-4000-8000-0000000000b1',
       'b1000000-0000-4000-8000-000000000001', 'vault:lock:', 10, 60) $$,
  '42501', null, 'authenticated cannot call lock_reveals');
reset role;

select * from finish();
rollback;
