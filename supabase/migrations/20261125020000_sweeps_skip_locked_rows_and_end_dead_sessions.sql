-- Stale rows are swept by whoever passes by: 1 in 100 counts runs public.sweep_expired_rows(),
-- inside the counting request's own transaction.
--
-- 1. The sweep used to wait for rows another transaction held. Requests that count twice (an IP,
--    then an address; a creator, then a token) could then wait on each other: one swept in its
--    first count and waited for the IP's row; the other held that row and swept in its second
--    count. Postgres ended one with a deadlock, answered 500. A sweep now skips locked rows (the
--    next sweep takes them) and never waits.
-- 2. Sessions and their refresh tokens were never deleted: one row per sign-in and one per refresh,
--    kept for ever. A session is dead once past expires_at (refreshing never extends it); a day
--    later its refresh tokens are deleted, then the session once it has none left. A token of a
--    deleted session is then refused as unknown rather than as ended; both are 401. The tokens go
--    first, and counted: a session refreshed hourly for a month holds ~720, and deleting a thousand
--    sessions by cascade could take longer than the statement timeout, every time.
-- 3. Nonces were swept by public.issue_nonce itself, all expired ones at once, waiting for locks:
--    a pile built cheaply (one bucket per IPv6 /64) could outlast the statement timeout on every
--    sweep. They are swept here now, like the rest, and issue_nonce only issues.
-- Each sweep deletes at most 1000 rows of each table, so no request carries a long one.
create index auth_sessions_expires_at_idx on public.auth_sessions (expires_at);

create function public.sweep_expired_rows() returns void
  language sql set search_path = public, pg_temp
  as $$
    delete from public.rate_limit_windows w
     where (w.bucket, w.window_start) in (
       select o.bucket, o.window_start from public.rate_limit_windows o
        where o.window_start < now() - interval '1 hour'
        limit 1000
        for update skip locked);
    delete from public.auth_nonces n
     where n.nonce in (
       select o.nonce from public.auth_nonces o
        where o.expires_at < now() - interval '1 day'
        limit 1000
        for update skip locked);
    delete from public.auth_refresh_tokens t
     where t.token_hash in (
       select o.token_hash from public.auth_refresh_tokens o
         join public.auth_sessions s on s.id = o.session_id
        where s.expires_at < now() - interval '1 day'
        limit 1000
        for update of o skip locked);
    delete from public.auth_sessions s
     where s.id in (
       select o.id from public.auth_sessions o
        where o.expires_at < now() - interval '1 day'
          and not exists (select 1 from public.auth_refresh_tokens t where t.session_id = o.id)
        limit 1000
        for update skip locked);
  $$;

revoke all on function public.sweep_expired_rows() from public, anon, authenticated;
grant execute on function public.sweep_expired_rows() to service_role;

create or replace function public.hit_rate_limit(bucket text, window_seconds integer)
  returns table (hits integer, retry_after integer)
  language plpgsql set search_path = public, pg_temp
  as $$
  #variable_conflict use_column
  begin
    -- Now and then, by whoever passes by: no scheduler needed, and at most a few stale rows.
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

-- As in 20261124030000, without its own sweep of nonces (sweep_expired_rows does it, bounded).
create or replace function public.issue_nonce(
  nonce text,
  ttl_seconds integer,
  bound_address text,
  bound_chain_id bigint,
  ip_bucket text,
  ip_limit integer,
  window_seconds integer
)
  returns table (outcome text, issued_at timestamptz, expires_at timestamptz, retry_after integer)
  language plpgsql set search_path = public, pg_temp
  as $$
  declare
    attempt record;
    stored public.auth_nonces%rowtype;
  begin
    select * into attempt from public.hit_rate_limit(ip_bucket, window_seconds);
    if attempt.hits > ip_limit then
      return query select 'rate_limited', null::timestamptz, null::timestamptz,
        greatest(1, attempt.retry_after);
      return;
    end if;
    insert into public.auth_nonces as n (nonce, expires_at, address, chain_id)
      values (issue_nonce.nonce, now() + make_interval(secs => ttl_seconds), bound_address,
        bound_chain_id)
    returning n.* into stored;
    return query select 'issued', stored.issued_at, stored.expires_at, null::integer;
  end
  $$;
