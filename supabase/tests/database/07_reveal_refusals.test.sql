-- Reveals refused for their server token (public.refuse_reveal): each is counted against the
-- client address's budget, and with a live session recorded as a 'reveal_refused' event naming no
-- type, up to the first refusal over the budget in a window, per client and per creator. Only the
-- service may call it.
begin;
create extension if not exists pgtap with schema extensions;
select plan(15);

insert into public.wallet_users (id, wallet_address) values
  ('f0000000-0000-4000-8000-000000000001', '0x' || repeat('f', 40)),
  ('f0000000-0000-4000-8000-000000000003', '0x' || repeat('e', 40));
insert into public.auth_sessions (id, user_id, expires_at, revoked_at, revoked_reason) values
  ('f0000000-0000-4000-8000-0000000000f1', 'f0000000-0000-4000-8000-000000000001',
    now() + interval '1 hour', null, null),
  ('f0000000-0000-4000-8000-0000000000f2', 'f0000000-0000-4000-8000-000000000001',
    now() + interval '1 hour', now(), 'logout'),
  ('f0000000-0000-4000-8000-0000000000f3', 'f0000000-0000-4000-8000-000000000003',
    now() + interval '1 hour', null, null);

select results_eq(
  $$ select hits, recorded from public.refuse_reveal('vault:reveal:wrong-token:ip:192.0.2.1', 2,
       60, 'f0000000-0000-4000-8000-0000000000f1', 'f0000000-0000-4000-8000-000000000001',
       'vault:reveal:refused:user:')
     union all
     select hits, recorded from public.refuse_reveal('vault:reveal:wrong-token:ip:192.0.2.1', 2,
       60, 'f0000000-0000-4000-8000-0000000000f1', 'f0000000-0000-4000-8000-000000000001',
       'vault:reveal:refused:user:')
     union all
     select hits, recorded from public.refuse_reveal('vault:reveal:wrong-token:ip:192.0.2.1', 2,
       60, 'f0000000-0000-4000-8000-0000000000f1', 'f0000000-0000-4000-8000-000000000001',
       'vault:reveal:refused:user:')
     union all
     select hits, recorded from public.refuse_reveal('vault:reveal:wrong-token:ip:192.0.2.1', 2,
       60, 'f0000000-0000-4000-8000-0000000000f1', 'f0000000-0000-4000-8000-000000000001',
       'vault:reveal:refused:user:') $$,
  $$ values (1, true), (2, true), (3, true), (4, false) $$,
  'each refusal is counted, and recorded up to the first one over the limit');
select ok(
  (select retry_after between 1 and 60 from public.refuse_reveal(
    'vault:reveal:wrong-token:ip:192.0.2.1', 2, 60, null, null, 'vault:reveal:refused:user:')),
  'the count comes with the seconds left in its window');
select results_eq(
  $$ select action, secret_types from public.secret_events
      where user_id = 'f0000000-0000-4000-8000-000000000001' order by id $$,
  $$ values ('reveal_refused', '{}'::text[]), ('reveal_refused', '{}'::text[]),
    ('reveal_refused', '{}'::text[]) $$,
  'the recorded refusals name the creator and no type');
select is(
  (select recorded from public.refuse_reveal('vault:reveal:wrong-token:ip:192.0.2.2', 2, 60,
    'f0000000-0000-4000-8000-0000000000f2', 'f0000000-0000-4000-8000-000000000001',
    'vault:reveal:refused:user:')),
  false, 'an ended session records nothing');
select is(
  (select recorded from public.refuse_reveal('vault:reveal:wrong-token:ip:192.0.2.2', 2, 60,
    'f0000000-0000-4000-8000-0000000000f1', 'f0000000-0000-4000-8000-000000000002',
    'vault:reveal:refused:user:')),
  false, 'a session that is not that user''s records nothing');
select is(
  (select hits from public.refuse_reveal('vault:reveal:wrong-token:ip:192.0.2.2', 2, 60,
    null, null, 'vault:reveal:refused:user:')),
  3, 'every refusal counts, with a session or without');
select is(
  (select count(*)::integer from public.secret_events
    where user_id = 'f0000000-0000-4000-8000-000000000001'),
  3, 'and only a live session of that user is recorded');

-- Five clients (five /64s of one IPv6 block, say), one refusal each, all within their own budgets.
select results_eq(
  $$ select recorded from public.refuse_reveal('vault:reveal:wrong-token:ip:2001:db8:0:1::', 2,
       60, 'f0000000-0000-4000-8000-0000000000f3', 'f0000000-0000-4000-8000-000000000003',
       'vault:reveal:refused:user:')
     union all
     select recorded from public.refuse_reveal('vault:reveal:wrong-token:ip:2001:db8:0:2::', 2,
       60, 'f0000000-0000-4000-8000-0000000000f3', 'f0000000-0000-4000-8000-000000000003',
       'vault:reveal:refused:user:')
     union all
     select recorded from public.refuse_reveal('vault:reveal:wrong-token:ip:2001:db8:0:3::', 2,
       60, 'f0000000-0000-4000-8000-0000000000f3', 'f0000000-0000-4000-8000-000000000003',
       'vault:reveal:refused:user:')
     union all
     select recorded from public.refuse_reveal('vault:reveal:wrong-token:ip:2001:db8:0:4::', 2,
       60, 'f0000000-0000-4000-8000-0000000000f3', 'f0000000-0000-4000-8000-000000000003',
       'vault:reveal:refused:user:')
     union all
     select recorded from public.refuse_reveal('vault:reveal:wrong-token:ip:2001:db8:0:5::', 2,
       60, 'f0000000-0000-4000-8000-0000000000f3', 'f0000000-0000-4000-8000-000000000003',
       'vault:reveal:refused:user:') $$,
  $$ values (true), (true), (true), (false), (false) $$,
  'many clients record up to the first refusal over the limit for one creator, then no more');
select is(
  (select count(*)::integer from public.secret_events
    where user_id = 'f0000000-0000-4000-8000-000000000003'),
  3, 'so a creator''s trail gains at most one over the limit a window, whatever the clients');
select is(
  (select hits from public.rate_limit_windows
    where bucket = 'vault:reveal:refused:user:f0000000-0000-4000-8000-000000000003'),
  5, 'the creator''s count is kept under the creator''s id');

select throws_ok(
  $$ insert into public.secret_events (user_id, secret_types, action)
       values ('f0000000-0000-4000-8000-000000000001', '{}', 'reveal') $$,
  '23514', null, 'only a refused reveal may name no type');
select lives_ok(
  $$ insert into public.secret_events (user_id, secret_types, action)
       values ('f0000000-0000-4000-8000-000000000001', array['provider_b_key'], 'reveal_refused') $$,
  'a refused reveal may name types');

select function_privs_are('public', 'refuse_reveal',
  array['text', 'integer', 'integer', 'uuid', 'uuid', 'text'],
  'service_role', array['EXECUTE'], 'service_role can execute refuse_reveal');

set local role anon;
select throws_ok(
  $$ select * from public.refuse_reveal('vault:reveal:wrong-token:ip:192.0.2.3', 2, 60, null,
  null, 'vault:reveal:refused:user:') $$,
  '42501', null, 'anon cannot call refuse_reveal');
reset role;
set local request.jwt.claims to
  '{"sub":"f0000000-0000-4000-8000-000000000001","role":"authenticated","session_id":"f0000000-0000-4000-8000-0000000000f1"}';
set local role authenticated;
select throws_ok(
  $$ select * from public.refuse_reveal('vault:reveal:wrong-token:ip:192.0.2.3', 2, 60,
       'f0000000-0000-4000-8000-0000000000f1', 'f0000000-0000-4000-8000-000000000001',
       'vault:reveal:refused:user:') $$,
  '42501', null, 'authenticated cannot call refuse_reveal');
reset role;

select * from finish();
rollback;
