-- The live-session check, with its plan kept. Every vault call and every row-level security policy
-- asks public.session_is_live_for. As a SQL function with its own search_path it is never inlined,
-- and a SQL function that is not inlined plans its query again on every call: pgbench measured
-- ~40 us a call, two calls per GET (the list's check and the policy's), against ~1 us for the same
-- EXISTS written inline. PL/pgSQL keeps a query's plan for the life of the connection, so the same
-- definition in PL/pgSQL costs what the inline one does (GET's statement: ~160 -> ~100 us).
-- Same arguments, same answer, same search_path; `create or replace` keeps its grants.
create or replace function public.session_is_live_for(session_id uuid, user_id uuid)
  returns boolean
  language plpgsql stable set search_path = pg_catalog, pg_temp
  as $$
  begin
    return exists (
      select 1 from public.auth_sessions s
       where s.id = session_is_live_for.session_id and s.user_id = session_is_live_for.user_id
         and s.revoked_at is null and s.expires_at > now()
    );
  end
  $$;
