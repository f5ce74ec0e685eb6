-- The masked list (public.list_user_secrets): one statement checks the session, switches to the
-- creator's role and claims, and reads under row-level security, so the policies, not only the
-- function's own filter, decide what comes back.
begin;
create extension if not exists pgtap with schema extensions;
select plan(7);

insert into public.wallet_users (id, wallet_address) values
  ('d0000000-0000-4000-8000-000000000001', '0xdddddddddddddddddddddddddddddddddddddddd'),
  ('d0000000-0000-4000-8000-000000000002', '0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee');
insert into public.auth_sessions (id, user_id, expires_at, revoked_at, revoked_reason) values
  ('d0000000-0000-4000-8000-0000000000d1', 'd0000000-0000-4000-8000-000000000001',
    now() + interval '1 hour', null, null),
  ('d0000000-0000-4000-8000-0000000000d2', 'd0000000-0000-4000-8000-000000000001',
    now() + interval '1 hour', now(), 'logout'),
  ('d0000000-0000-4000-8000-0000000000e1', 'd0000000-0000-4000-8000-000000000002',
    now() + interval '1 hour', null, null);
insert into public.user_secrets (user_id, secret_type, ciphertext, iv, key_id, hint) values
  ('d0000000-0000-4000-8000-000000000001', 'provider_c_key', '\x0101010101010101010101010101010101'::bytea, '\x000000000000000000000000'::bytea, 'k1', null),
  ('d0000000-0000-4000-8000-000000000001', 'provider_a_api_key', '\x0101010101010101010101010101010101'::bytea, '\x000000000000000000000000'::bytea, 'k1',
    '…wxyz'),
  ('d0000000-0000-4000-8000-000000000002', 'provider_b_key', '\x0101010101010101010101010101010101'::bytea, '\x000000000000000000000000'::bytea, 'k1', null);

create function pg_temp.claims(sub text, session_id text) returns text language sql as $$
  select json_build_object('sub', sub, 'role', 'authenticated', 'session_id', session_id)::text
$$;

select results_eq(
  $$ select live, secret_type, hint from public.list_user_secrets(
       pg_temp.claims('d0000000-0000-4000-8000-000000000001', 'd0000000-0000-4000-8000-0000000000d1'),
       'd0000000-0000-4000-8000-0000000000d1', 'd0000000-0000-4000-8000-000000000001',
       array['provider_a_api_key', 'provider_b_key', 'provider_c_key']) $$,
  $$ values (true, 'provider_a_api_key', '…wxyz'), (true, 'provider_c_key', null) $$,
  'a live session lists its creator''s types and hints, in the order given');
select is(current_user::text, 'authenticated',
  'the read ran as authenticated, which lasts to the end of the transaction');
reset role;

select results_eq(
  $$ select live, secret_type from public.list_user_secrets(
       pg_temp.claims('d0000000-0000-4000-8000-000000000001', 'd0000000-0000-4000-8000-0000000000d2'),
       'd0000000-0000-4000-8000-0000000000d2', 'd0000000-0000-4000-8000-000000000001',
       array['provider_a_api_key']) $$,
  $$ values (false, null::text) $$,
  'a revoked session gets one row that says it is not live, and nothing else');
select isnt(current_user::text, 'authenticated', 'and the role was never switched');

-- Row-level security decides, not the function's filter: claims that name another session (or
-- another creator) than the one checked read nothing.
select is_empty(
  $$ select secret_type from public.list_user_secrets(
       pg_temp.claims('d0000000-0000-4000-8000-000000000001', 'd0000000-0000-4000-8000-0000000000d2'),
       'd0000000-0000-4000-8000-0000000000d1', 'd0000000-0000-4000-8000-000000000001',
       array['provider_a_api_key']) $$,
  'claims naming an ended session read nothing, even after a live session was checked');
reset role;
select is_empty(
  $$ select secret_type from public.list_user_secrets(
       pg_temp.claims('d0000000-0000-4000-8000-000000000002', 'd0000000-0000-4000-8000-0000000000e1'),
       'd0000000-0000-4000-8000-0000000000d1', 'd0000000-0000-4000-8000-000000000001',
       array['provider_a_api_key', 'provider_c_key']) $$,
  'claims of another creator read none of the checked creator''s rows');
reset role;
select results_eq(
  $$ select live, secret_type from public.list_user_secrets(
       pg_temp.claims('d0000000-0000-4000-8000-000000000002', 'd0000000-0000-4000-8000-0000000000e1'),
       'd0000000-0000-4000-8000-0000000000e1', 'd0000000-0000-4000-8000-000000000002',
       array['provider_a_api_key', 'provider_b_key', 'provider_c_key']) $$,
  $$ values (true, 'provider_b_key') $$,
  'the other creator, with its own live session, lists only its own row');
reset role;

select * from finish();
rollback;
