-- Each secret's last release, kept beside the trail so the masked list reads it in one index
-- lookup per secret, whatever the trail's length, and after retention has removed the event.

-- One row per creator and type: the last reveal that named it, and the one before, so a reveal
-- whose decryption then failed can be taken back (public.record_reveal_failure). Null times mean
-- no release is known. It goes with the account; the trail does not.
create table public.secret_last_reveals (
  user_id uuid not null references public.wallet_users (id) on delete cascade,
  secret_type text not null,
  revealed_at timestamptz,
  event_id bigint,
  previous_revealed_at timestamptz,
  previous_event_id bigint,
  -- The live-run credential that made each release (null: the legacy token, or none known).
  credential_name text,
  previous_credential_name text,
  primary key (user_id, secret_type)
);

alter table public.secret_last_reveals enable row level security;
alter table public.secret_last_reveals force row level security;
revoke all on public.secret_last_reveals from public, anon, authenticated;
grant all on public.secret_last_reveals to service_role;
-- The list reads it as the creator: when and by whom, never which event or what came before.
grant select (user_id, secret_type, revealed_at, credential_name) on public.secret_last_reveals
  to authenticated;
create policy secret_last_reveals_owner_read on public.secret_last_reveals
  for select to authenticated
  using (user_id = (select auth.uid()) and (select public.session_is_live_from_claims()));

-- Written by the database with each 'reveal' event, in its transaction, so no path that records a
-- reveal can forget it. A reveal that started earlier than the one already noted does not move it
-- back; an event of a creator who no longer exists (the trail outlives accounts) notes nothing.
create function public.note_last_reveal() returns trigger
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  begin
    insert into public.secret_last_reveals as l
        (user_id, secret_type, revealed_at, event_id, credential_name)
      select new.user_id, t.secret_type, new.occurred_at, new.id, new.credential_name
        from unnest(new.secret_types) as t (secret_type)
       where exists (select 1 from public.wallet_users u where u.id = new.user_id)
    on conflict (user_id, secret_type) do update
      set previous_revealed_at = l.revealed_at, previous_event_id = l.event_id,
          previous_credential_name = l.credential_name,
          revealed_at = excluded.revealed_at, event_id = excluded.event_id,
          credential_name = excluded.credential_name
      where l.revealed_at is null or l.revealed_at <= excluded.revealed_at;
    return null;
  end
  $$;
create trigger secret_events_last_reveal
  after insert on public.secret_events
  for each row when (new.action = 'reveal') execute function public.note_last_reveal();

-- The masked list, read as the creator under row-level security, each secret with its last use and
-- the live-run credential that made it: its secret_last_reveals row when that release came after
-- the value was saved (a replacement starts again from never), one primary-key lookup per secret;
-- 11_list_plan.test.sql explains this very query as `authenticated` to hold it to that plan. The
-- read comes first: a row it returns has passed the policies' live-session check, so the session is
-- checked again only when the read finds nothing, back in the caller's role, to tell "nothing
-- stored" (no row) from "session ended" (one row, live = false). The caller passes `claims`,
-- `session_id` and `user_id` from one verified token.
drop function public.list_user_secrets(text, uuid, uuid, text[]);
create function public.list_user_secrets(
  claims text, session_id uuid, user_id uuid, secret_types text[]
)
  returns table (
    live boolean, secret_type text, updated_at timestamptz, hint text, last_used_at timestamptz,
    last_used_by text
  )
  language plpgsql set search_path = pg_catalog, pg_temp
  as $$
  declare
    caller text := public.act_as_creator(list_user_secrets.claims);
  begin
    return query
      select true, s.secret_type, s.updated_at, s.hint, l.revealed_at, l.credential_name
        from public.user_secrets s
        left join public.secret_last_reveals l
          on l.user_id = s.user_id and l.secret_type = s.secret_type
         and l.revealed_at >= s.updated_at
       where s.user_id = list_user_secrets.user_id
       order by array_position(list_user_secrets.secret_types, s.secret_type);
    if found then
      return;
    end if;
    perform set_config('role', caller, true);
    if not public.session_is_live_for(list_user_secrets.session_id, list_user_secrets.user_id) then
      return query select false, null::text, null::timestamptz, null::text, null::timestamptz,
        null::text;
    end if;
  end
  $$;

-- The list's reveal-set walk is replaced by secret_last_reveals; its index has no reader left.
drop index public.secret_events_reveal_sets_idx;

revoke all on function public.note_last_reveal() from public, anon, authenticated;
revoke all on function public.list_user_secrets(text, uuid, uuid, text[])
  from public, anon, authenticated;
grant execute on function public.list_user_secrets(text, uuid, uuid, text[]) to service_role;

-- Existing reveals, so no saved key reads as never used after the upgrade: each type's latest
-- reveal since the trail began (one pass over the reveals; the previous release is not known).
insert into public.secret_last_reveals
    (user_id, secret_type, revealed_at, event_id, credential_name)
  select distinct on (e.user_id, t.secret_type) e.user_id, t.secret_type, e.occurred_at, e.id,
         e.credential_name
    from public.secret_events e
    cross join unnest(e.secret_types) as t (secret_type)
    join public.wallet_users u on u.id = e.user_id
   where e.action = 'reveal'
   order by e.user_id, t.secret_type, e.occurred_at desc, e.id desc;
