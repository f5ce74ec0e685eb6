-- Rate limits: fixed-window counters kept in the database, so a limit holds across every function
-- instance, and counted inside the same transaction as the work they guard.

create table public.rate_limit_windows (
  bucket text not null,
  window_start timestamptz not null,
  hits integer not null default 1,
  primary key (bucket, window_start)
);

alter table public.rate_limit_windows enable row level security;
alter table public.rate_limit_windows force row level security;
revoke all on public.rate_limit_windows from public, anon, authenticated;
grant all on public.rate_limit_windows to service_role;

-- One hit on `bucket`'s current window: the hits so far in it, and the seconds until it ends.
-- Every counting path also sweeps stale rows now and then (public.sweep_expired_rows), so no
-- scheduler is needed. PL/pgSQL keeps the upsert's plan per connection; security definer makes it
-- run as the owner whoever calls it (the service directly, or the vault's functions), so one plan
-- serves both.
create function public.hit_rate_limit(bucket text, window_seconds integer)
  returns table (hits integer, retry_after integer)
  language plpgsql security definer set search_path = public, pg_temp
  as $$
  #variable_conflict use_column
  begin
    if random() < 0.01 then
      perform public.sweep_expired_rows();
    end if;
    return query
      insert into public.rate_limit_windows as w (bucket, window_start, hits)
        values (
          hit_rate_limit.bucket,
          to_timestamp(floor(extract(epoch from now()) / hit_rate_limit.window_seconds)
            * hit_rate_limit.window_seconds),
          1
        )
      on conflict on constraint rate_limit_windows_pkey do update set hits = w.hits + 1
      returning w.hits,
        ceil(extract(epoch from w.window_start) + hit_rate_limit.window_seconds
          - extract(epoch from now()))::integer;
  end
  $$;

revoke all on function public.hit_rate_limit(text, integer) from public, anon, authenticated;
grant execute on function public.hit_rate_limit(text, integer) to service_role;
