-- The rate-limit counter: hits in a window add up, and windows older than an hour are swept by
-- the counter itself (on about one hit in a hundred), whichever path counts.
begin;
create extension if not exists pgtap with schema extensions;
select plan(2);

insert into public.rate_limit_windows (bucket, window_start, hits)
  values ('test:stale', now() - interval '2 hours', 5);

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

select * from finish();
rollback;
