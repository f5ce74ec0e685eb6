-- GET's masked list in one statement. The list used to be two: one that checked the session and
-- switched to the creator's role and claims, then the read. Through a transaction pooler nothing
-- is prepared, so each statement with parameters waits for its own Parse/Describe round trip
-- before it runs: GET paid one more round trip than a bare read. Now one call does the check, the
-- switch and the read, and row-level security still decides what the read returns: the read runs
-- as `authenticated` with the creator's claims, under the same policies (which require the live
-- session again, so a token whose session ended reads nothing even if it got this far).
--
-- Security invoker on purpose: a security definer function cannot switch role. The role and the
-- claims it sets are local to the caller's transaction, as the statement they replace set them:
-- they end at its COMMIT, so a pooled server connection passes nothing on to the next client.
-- Outcomes: no live session: one row with live = false and nothing else; otherwise one row per
-- stored secret, in the order of `secret_types`, each with live = true (none: nothing stored).
create function public.list_user_secrets(
  claims text,
  session_id uuid,
  user_id uuid,
  secret_types text[]
)
  returns table (live boolean, secret_type text, updated_at timestamptz, hint text)
  language plpgsql set search_path = pg_catalog, pg_temp
  as $$
  #variable_conflict use_column
  begin
    if not public.session_is_live_for(list_user_secrets.session_id, list_user_secrets.user_id) then
      return query select false, null::text, null::timestamptz, null::text;
      return;
    end if;
    perform set_config('request.jwt.claims', list_user_secrets.claims, true);
    perform set_config('role', 'authenticated', true);
    return query
      select true, s.secret_type, s.updated_at, s.hint
        from public.user_secrets s
       where s.user_id = list_user_secrets.user_id
       order by array_position(list_user_secrets.secret_types, s.secret_type);
  end
  $$;

-- The service's alone: Supabase grants new functions to the API roles by default.
revoke all on function public.list_user_secrets(text, uuid, uuid, text[])
  from public, anon, authenticated;
grant execute on function public.list_user_secrets(text, uuid, uuid, text[]) to service_role;
