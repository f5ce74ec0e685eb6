-- The service's vault functions (executable by its own connection only): each checks the session
-- is live and counts the request against its limit before it writes; a reveal's read and its audit
-- event are one statement.
begin;
create extension if not exists pgtap with schema extensions;
select plan(14);

insert into public.wallet_users (id, wallet_address) values
  ('c0000000-0000-4000-8000-000000000001', '0xcccccccccccccccccccccccccccccccccccccccc');
insert into public.auth_sessions (id, user_id, expires_at, revoked_at, revoked_reason) values
  ('c0000000-0000-4000-8000-0000000000c1', 'c0000000-0000-4000-8000-000000000001',
    now() + interval '1 hour', null, null),
  ('c0000000-0000-4000-8000-0000000000c2', 'c0000000-0000-4000-8000-000000000001',
    now() + interval '1 hour', now(), 'logout');

select results_eq(
  $$ select outcome, created from public.put_user_secret('c0000000-0000-4000-8000-0000000000c1',
       'c0000000-0000-4000-8000-000000000001', 'provider_b_key',
       '\x0101010101010101010101010101010101'::bytea, '\x000000000000000000000000'::bytea, 'k1',
       '…abcd', 'vault:write:', 2, 60) $$,
  $$ values ('stored', true) $$,
  'a live session stores a new row');
select results_eq(
  $$ select outcome, created from public.put_user_secret('c0000000-0000-4000-8000-0000000000c1',
       'c0000000-0000-4000-8000-000000000001', 'provider_b_key',
       '\x0202020202020202020202020202020202'::bytea, '\x000000000000000000000000'::bytea, 'k1',
       null, 'vault:write:', 2, 60) $$,
  $$ values ('stored', false) $$,
  'the second write replaces it');
select results_eq(
  $$ select outcome, retry_after between 1 and 60
       from public.put_user_secret('c0000000-0000-4000-8000-0000000000c1',
       'c0000000-0000-4000-8000-000000000001', 'provider_c_key',
       '\x0303030303030303030303030303030303'::bytea, '\x000000000000000000000000'::bytea, 'k1',
       null, 'vault:write:', 2, 60) $$,
  $$ values ('rate_limited', true) $$,
  'the write over the limit is refused with a retry time');
select results_eq(
  $$ select outcome from public.delete_user_secret('c0000000-0000-4000-8000-0000000000c1',
       'c0000000-0000-4000-8000-000000000001', 'provider_b_key', 'vault:write:', 2, 60) $$,
  $$ values ('rate_limited') $$,
  'deletes share the writes'' limit');
select results_eq(
  $$ select secret_type from public.user_secrets
      where user_id = 'c0000000-0000-4000-8000-000000000001' $$,
  $$ values ('provider_b_key') $$,
  'the refused writes changed nothing');
select results_eq(
  $$ select outcome from public.put_user_secret('c0000000-0000-4000-8000-0000000000c2',
       'c0000000-0000-4000-8000-000000000001', 'provider_d_key',
       '\x0404040404040404040404040404040404'::bytea, '\x000000000000000000000000'::bytea, 'k1',
       null, 'vault:write:', 100, 60) $$,
  $$ values ('session_revoked') $$,
  'a revoked session writes nothing');
select results_eq(
  $$ select outcome from public.delete_user_secret('c0000000-0000-4000-8000-0000000000c1',
       'c0000000-0000-4000-8000-000000000001', 'provider_e_key', 'vault:write:', 100, 60) $$,
  $$ values ('not_found') $$,
  'deleting a type that is not stored says so');

insert into public.user_secrets (user_id, secret_type, ciphertext, iv, key_id) values
  ('c0000000-0000-4000-8000-000000000001', 'provider_e_key',
    '\x0505050505050505050505050505050505'::bytea, '\x000000000000000000000000'::bytea, 'k1');
select results_eq(
  $$ select outcome, secret_type, key_id
       from public.reveal_user_secrets('c0000000-0000-4000-8000-0000000000c1',
       'c0000000-0000-4000-8000-000000000001',
       array['provider_e_key', 'provider_d_key', 'provider_b_key'], 'bucket',
       'vault:reveal:user:', 10, 'vault:reveal:token:', 10, 60) $$,
  $$ values ('revealed', 'provider_e_key', 'k1'), ('revealed', 'provider_b_key', 'k1') $$,
  'a reveal returns the stored rows asked for, in the order asked for');
select results_eq(
  $$ select action, secret_types from public.secret_events
      where user_id = 'c0000000-0000-4000-8000-000000000001' and action like 'reveal%'
      order by id $$,
  $$ values ('reveal', array['provider_e_key', 'provider_b_key']) $$,
  'and has recorded one reveal event naming the types read, in that order, in the same statement');
select is_empty(
  $$ select * from public.reveal_user_secrets('c0000000-0000-4000-8000-0000000000c1',
       'c0000000-0000-4000-8000-000000000001', array['provider_d_key'], 'bucket',
       'vault:reveal:user:', 10, 'vault:reveal:token:', 10, 60) $$,
  'a reveal of a type not stored reads nothing');
select results_eq(
  $$ select outcome from public.reveal_user_secrets('c0000000-0000-4000-8000-0000000000c2',
       'c0000000-0000-4000-8000-000000000001', array['provider_b_key'], 'bucket',
       'vault:reveal:user:', 10, 'vault:reveal:token:', 10, 60) $$,
  $$ values ('session_revoked') $$,
  'a revoked session reveals nothing');
select is(
  public.record_reveal_failure('c0000000-0000-4000-8000-0000000000c1',
    'c0000000-0000-4000-8000-000000000001', array['provider_e_key', 'provider_b_key'],
    (select max(id) from public.secret_events where action = 'reveal')),
  1, 'failed decryptions are recorded as one event');
select is(
  public.record_reveal_failure('c0000000-0000-4000-8000-0000000000c1',
    'c0000000-0000-4000-8000-000000000001', array[]::text[], 1),
  0, 'no type named, nothing recorded');
select results_eq(
  $$ select action, secret_types from public.secret_events
      where user_id = 'c0000000-0000-4000-8000-000000000001' and action like 'reveal%'
      order by id $$,
  $$ values ('reveal', array['provider_e_key', 'provider_b_key']),
    ('reveal_failed', array['provider_e_key', 'provider_b_key']) $$,
  'the reveal that read nothing recorded nothing; reveal_failed follows its reveal');

select * from finish();
rollback;
