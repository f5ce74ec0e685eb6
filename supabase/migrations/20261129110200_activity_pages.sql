-- A page of the creator's audit trail, as before (20261126100600_audit.sql) but with each event's
-- live-run credential (null for events no credential made), now as deep in the trail as on its
-- first page: the cursor event is read first, as the creator under row-level
-- security (an event that is not the creator's reads nothing, so the page is empty), and its time
-- then bounds the index scan on secret_events_user_id_idx from where the previous page ended. In
-- one join the planner could walk the creator's whole trail from its newest event to the cursor.
drop function public.list_secret_events(text, uuid, uuid, bigint, integer);
create function public.list_secret_events(
  claims text, session_id uuid, user_id uuid, before_id bigint, page_size integer
)
  returns table (
    live boolean, id bigint, occurred_at timestamptz, action text, secret_types text[], reason text,
    credential_name text
  )
  language plpgsql set search_path = pg_catalog, pg_temp
  as $$
  declare
    caller text := public.act_as_creator(list_secret_events.claims);
    cursor_at timestamptz;
    cursor_id bigint;
  begin
    if list_secret_events.before_id is null then
      return query
        select true, e.id, e.occurred_at, e.action, e.secret_types, e.reason,
               e.credential_name
          from public.secret_events e
         where e.user_id = list_secret_events.user_id
         order by e.occurred_at desc, e.id desc
         limit list_secret_events.page_size;
    else
      select c.occurred_at, c.id into cursor_at, cursor_id
        from public.secret_events c
       where c.id = list_secret_events.before_id and c.user_id = list_secret_events.user_id;
      return query
        select true, e.id, e.occurred_at, e.action, e.secret_types, e.reason,
               e.credential_name
          from public.secret_events e
         where e.user_id = list_secret_events.user_id and e.occurred_at <= cursor_at
           and (e.occurred_at < cursor_at or e.id < cursor_id)
         order by e.occurred_at desc, e.id desc
         limit list_secret_events.page_size;
    end if;
    if found then
      return;
    end if;
    perform set_config('role', caller, true);
    if not public.session_is_live_for(list_secret_events.session_id, list_secret_events.user_id)
    then
      return query select false, null::bigint, null::timestamptz, null::text, null::text[],
        null::text, null::text;
    end if;
  end
  $$;

-- The service's alone: Supabase grants new functions to the API roles by default.
revoke all on function public.list_secret_events(text, uuid, uuid, bigint, integer)
  from public, anon, authenticated;
grant execute on function public.list_secret_events(text, uuid, uuid, bigint, integer)
  to service_role;
