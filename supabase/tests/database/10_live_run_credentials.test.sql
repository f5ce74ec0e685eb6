-- Live-run credentials in the reveal's own statement: a live one reveals its scope and names itself
-- in the event; a type outside its scope is refused and recorded; an unknown, revoked or expired one
-- is refused before anything is counted or read; a reveal naming no type gets the scope's types.
begin;
create extension if not exists pgtap with schema extensions;
select plan(9);

insert into public.wallet_users (id, wallet_address) values
  ('e0000000-0000-4000-8000-000000000001', '0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee');
insert into public.auth_sessions (id, user_id, expires_at) values
  ('e0000000-0000-4000-8000-0000000000e1', 'e0000000-0000-4000-8000-000000000001',
    now() + interval '1 hour');
insert into public.user_secrets (user_id, secret_type, ciphertext, iv, key_id) values
  ('e0000000-0000-4000-8000-000000000001', 'provider_b_key',
    '\x0505050505050505050505050505050505'::bytea, '\x000000000000000000000000'::bytea, 'k1'),
  ('e0000000-0000-4000-8000-000000000001', 'provider_c_key',
    '\x0606060606060606060606060606060606'::bytea, '\x000000000000000000000000'::bytea, 'k1');
insert into public.live_run_credentials (name, secret_types, token_hash, expires_at, revoked_at)
  values
  ('image-worker', array['provider_b_key'], sha256('live'::bytea), null, null),
  ('old-worker', array['provider_b_key'], sha256('revoked'::bytea), null, now()),
  ('gone-worker', array['provider_b_key'], sha256('expired'::bytea),
    now() - interval '1 second', null);

select results_eq(
  $$ select outcome, secret_type, credential_name from public.reveal_user_secrets(
       'e0000000-0000-4000-8000-0000000000e1', 'e0000000-0000-4000-8000-000000000001',
       array['provider_b_key'], 'bucket-e', 'vault:reveal:user:', 10, 'vault:reveal:token:', 10,
       60, sha256('live'::bytea)) $$,
  $$ values ('revealed', 'provider_b_key', 'image-worker') $$,
  'a live credential reveals a type in its scope');
select results_eq(
  $$ select action, secret_types, credential_name from public.secret_events
      where user_id = 'e0000000-0000-4000-8000-000000000001' order by id desc limit 1 $$,
  $$ values ('reveal', array['provider_b_key'], 'image-worker') $$,
  'and its event names the credential');
select results_eq(
  $$ select outcome, secret_type from public.reveal_user_secrets(
       'e0000000-0000-4000-8000-0000000000e1', 'e0000000-0000-4000-8000-000000000001',
       array['provider_b_key', 'provider_c_key'], 'bucket-e', 'vault:reveal:user:', 10,
       'vault:reveal:token:', 10, 60,
       sha256('live'::bytea)) $$,
  $$ values ('out_of_scope', null::text) $$,
  'a type outside the scope refuses the whole reveal, reading nothing');
select results_eq(
  $$ select action, secret_types, reason, credential_name from public.secret_events
      where user_id = 'e0000000-0000-4000-8000-000000000001' order by id desc limit 1 $$,
  $$ values ('reveal_refused', array['provider_b_key', 'provider_c_key'], 'out_of_scope',
       'image-worker') $$,
  'and is recorded with the types asked for');
select results_eq(
  $$ select secret_type from public.reveal_user_secrets(
       'e0000000-0000-4000-8000-0000000000e1', 'e0000000-0000-4000-8000-000000000001',
       array['provider_a_api_key', 'provider_b_key', 'provider_c_key'], 'bucket-e',
       'vault:reveal:user:', 10, 'vault:reveal:token:', 10, 60,
       sha256('live'::bytea), true) $$,
  $$ values ('provider_b_key') $$,
  'a reveal naming no type reads the types in the scope');
select is(
  (select hits from public.rate_limit_windows
    where bucket = 'vault:reveal:user:e0000000-0000-4000-8000-000000000001'),
  3, 'each reveal with a live credential counted against the creator''s budget');
select results_eq(
  $$ select r.outcome from (values (1, sha256('revoked'::bytea)),
       (2, sha256('expired'::bytea)), (3, sha256('unknown'::bytea)))
       as presented (n, hash),
       lateral public.reveal_user_secrets('e0000000-0000-4000-8000-0000000000e1',
         'e0000000-0000-4000-8000-000000000001', array['provider_b_key'], 'bucket-e',
         'vault:reveal:user:', 10, 'vault:reveal:token:', 10, 60,
         presented.hash) r
     order by presented.n $$,
  $$ values ('credential_refused'), ('credential_refused'), ('credential_refused') $$,
  'a revoked, an expired and an unknown credential are refused');
select is(
  (select hits from public.rate_limit_windows
    where bucket = 'vault:reveal:user:e0000000-0000-4000-8000-000000000001'),
  3, 'a refused credential spends none of the creator''s budget');
select throws_ok(
  $$ insert into public.live_run_credentials (name, secret_types, token_hash)
       values ('legacy', array['provider_b_key'], sha256('x'::bytea)) $$,
  '23514', null, 'no credential is named legacy');

select * from finish();
rollback;
