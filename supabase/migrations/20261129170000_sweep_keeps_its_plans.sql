-- The sweep in PL/pgSQL, so a connection plans its four deletes once and keeps the plans: as a SQL
-- function with its own search_path it was never inlined and planned all four again at every call
-- (one counted hit in a hundred). Same statements, same role (hit_rate_limit's owner), same grants.
create or replace function public.sweep_expired_rows() returns void
  language plpgsql set search_path = public, pg_temp
  as $$
  begin
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
  end
  $$;
