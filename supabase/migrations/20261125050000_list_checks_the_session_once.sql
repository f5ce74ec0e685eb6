-- GET's list checks the session once when it reads a row.
--
-- public.list_user_secrets checked the session, then read as the creator under row-level security,
-- whose policy checks the same session again: two checks for every GET. A row the read returns has
-- passed the policy's check, so the first proves nothing more; it only told "nothing stored" from
-- "session ended", which matters only when the read returns nothing. Now the read comes first, and
-- the function's own check runs only then, back in the caller's role (the check is the service's:
-- `authenticated` may not execute it). Same outcomes: a live session's rows; no live session, one
-- row with live = false; a live session with nothing stored, no row. A read that finds rows is
-- decided by `claims` (the policy reads the session from them), the check after an empty read by
-- `session_id` and `user_id`: the caller passes all three from one verified token, as the service
-- does (functions/user-secrets/vault-store.ts).

create or replace function public.list_user_secrets(
  claims text,
  session_id uuid,
  user_id uuid,
  secret_types text[]
)
  returns table (live boolean, secret_type text, updated_at timestamptz, hint text)
  language plpgsql set search_path = pg_catalog, pg_temp
  as $$
  #variable_conflict use_column
  declare
    caller text := current_user;
  begin
    perform set_config('request.jwt.claims', list_user_secrets.claims, true);
    perform set_config('role', 'authenticated', true);
    return query
      select true, s.secret_type, s.updated_at, s.hint
        from public.user_secrets s
       where s.user_id = list_user_secrets.user_id
       order by array_position(list_user_secrets.secret_types, s.secret_type);
    if found then
      return;
    end if;
    perform set_config('role', caller, true);
    if not public.session_is_live_for(list_user_secrets.session_id, list_user_secrets.user_id) then
      return query select false, null::text, null::timestamptz, null::text;
    end if;
  end
  $$;
