-- Stale rows are swept by whoever passes by: 1 in 100 counts (public.hit_rate_limit) runs the sweep
-- inside the counting request's own transaction, so no scheduler is needed.
--
-- A session is dead once past expires_at; a day later its refresh tokens go, then the session once
-- it has none left (a token of a deleted session is refused as unknown, 401 as for an ended one).
-- The tokens go first and counted, because a long-lived session holds many and a cascade from
-- thousands of sessions could outlast the statement timeout every time. Each sweep deletes at most
-- 1000 rows of each table, so no request carries a long one, and skips rows another transaction
-- holds: requests that count twice (an IP, then an address) must never wait on each other's rows,
-- which would deadlock.
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
