-- The rate-limit counter: hits in a window add up, and the counter itself (on about one hit in a
-- hundred), whichever path counts, sweeps windows older than an hour and sessions a day past
-- their expiry, with their refresh tokens.
begin;
create extension if not exists pgtap with schema extensions;
select plan(10);

insert into public.rate_limit_windows (bucket, window_start, hits)
  values ('test:stale', now() - interval '2 hours', 5);
insert into public.wallet_users (id, wallet_address)
  values ('e0000000-0000-4000-8000-0000000000e1', '0x' || repeat('e', 40));
insert into public.auth_sessions (id, user_id, created_at, expires_at) values
  ('e0000000-0000-4000-8000-00000000d1ed', 'e0000000-0000-4000-8000-0000000000e1',
   now() - interval '40 days', now() - interval '2 days'),
  ('e0000000-0000-4000-8000-0000000e4d1a', 'e0000000-0000-4000-8000-0000000000e1',
   now() - interval '31 days', now() - interval '1 hour'),
  ('e0000000-0000-4000-8000-00000000a11e', 'e0000000-0000-4000-8000-0000000000e1',
   now(), now() + interval '30 days');
insert into public.auth_refresh_tokens (token_hash, session_id)
  select sha256(convert_to(s::text, 'UTF8')), s from (values
    ('e0000000-0000-4000-8000-00000000d1ed'::uuid), ('e0000000-0000-4000-8000-0000000e4d1a'),
    ('e0000000-0000-4000-8000-00000000a11e')) v (s);

select results_eq(
  $$ select hits from public.hit_rate_limit('test:count', 60)
     union all select hits from public.hit_rate_limit('test:count', 60) $$,
  array[1, 2],
  'hits in one window add up'
);

-- 2,000 hits leave a stale window behind with a chance of 0.99^2000, about 2e-9.
do $$
begin
  for i in 1..2000 loop
    perform public.hit_rate_limit('test:sweep', 60);
  end loop;
end
$$;
select is_empty(
  $$ select 1 from public.rate_limit_windows where bucket = 'test:stale' $$,
  'windows older than an hour are swept by the counter'
);
select results_eq(
  $$ select id from public.auth_sessions where user_id = 'e0000000-0000-4000-8000-0000000000e1'
      order by expires_at $$,
  array['e0000000-0000-4000-8000-0000000e4d1a'::uuid, 'e0000000-0000-4000-8000-00000000a11e'],
  'sessions a day past their expiry are swept; those just expired and live ones stay'
);
select is_empty(
  $$ select 1 from public.auth_refresh_tokens
      where session_id = 'e0000000-0000-4000-8000-00000000d1ed' $$,
  'a swept session takes its refresh tokens with it'
);
select is(
  (select count(*)::integer from public.auth_refresh_tokens
    where session_id in ('e0000000-0000-4000-8000-0000000e4d1a',
                         'e0000000-0000-4000-8000-00000000a11e')),
  2,
  'the other sessions keep their refresh tokens'
);

-- A sweep deletes at most 1000 refresh tokens: a dead session refreshed 1,500 times keeps 500 and
-- stays until the next sweep takes them, then goes.
insert into public.auth_sessions (id, user_id, created_at, expires_at) values
  ('e0000000-0000-4000-8000-000000000b16', 'e0000000-0000-4000-8000-0000000000e1',
   now() - interval '40 days', now() - interval '2 days');
insert into public.auth_refresh_tokens (token_hash, session_id)
  select sha256(convert_to('big-' || n, 'UTF8')), 'e0000000-0000-4000-8000-000000000b16'
    from generate_series(1, 1500) n;
select public.sweep_expired_rows();
select is(
  (select count(*)::integer from public.auth_refresh_tokens
    where session_id = 'e0000000-0000-4000-8000-000000000b16'),
  500,
  'one sweep deletes at most 1000 refresh tokens'
);
select isnt_empty(
  $$ select 1 from public.auth_sessions where id = 'e0000000-0000-4000-8000-000000000b16' $$,
  'a dead session stays while it still has refresh tokens'
);
select public.sweep_expired_rows();
select is_empty(
  $$ select 1 from public.auth_sessions where id = 'e0000000-0000-4000-8000-000000000b16' $$,
  'the next sweep takes the rest of its tokens, then the session'
);

-- Nonces a day past expiry go the same way, 1000 at most per sweep, and only those.
insert into public.auth_nonces (nonce, expires_at)
  select 'testoldnonce' || lpad(n::text, 8, '0'), now() - interval '2 days'
    from generate_series(1, 1500) n;
insert into public.auth_nonces (nonce, expires_at) values ('testfreshnonce0001', now() - interval '1 hour');
select public.sweep_expired_rows();
select is(
  (select count(*)::integer from public.auth_nonces where nonce like 'testoldnonce%'),
  500,
  'one sweep deletes at most 1000 nonces a day past expiry'
);
select isnt_empty(
  $$ select 1 from public.auth_nonces where nonce = 'testfreshnonce0001' $$,
  'a nonce expired an hour ago stays'
);

select * from finish();
rollback;
