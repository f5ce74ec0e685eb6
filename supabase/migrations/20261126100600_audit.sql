-- The audit trail: who, which types, what happened, when; never a value. It outlives the account:
-- user_id has no foreign key, so a deleted creator's events keep its former id, which no wallet
-- maps to any more. A creator reads its own events while its session is live; nobody but the
-- database and the service's functions writes them.

-- An event names its types in `secret_types`: the one type a save, replacement, rotation or delete
-- touched; every type a reveal read; the types a failed reveal could not decrypt, or a refused one
-- asked for. Only a refusal, a lock or an unlock may name none. `reason` says why a reveal was
-- refused when it was not for its server token.
create table public.secret_events (
  id bigint generated always as identity primary key,
  user_id uuid not null,
  secret_types text[] not null,
  action text not null,
  occurred_at timestamptz not null default now(),
  reason text,
  constraint secret_events_action_check
    check (action in ('put', 'replace', 'delete', 'reveal', 'reveal_failed', 'reveal_refused',
      'rotate', 'lock', 'unlock')),
  constraint secret_events_secret_types_check
    check (case when cardinality(secret_types) = 0
      then action in ('reveal_refused', 'lock', 'unlock')
      else array_ndims(secret_types) = 1 and array_position(secret_types, null) is null end),
  constraint secret_events_reason_check
    check (reason is null or (action = 'reveal_refused' and reason = 'vault_locked'))
);
create index secret_events_user_id_idx on public.secret_events (user_id, occurred_at);
-- For each secret's last use in public.list_user_secrets: the one index entry a reveal adds.
create index secret_events_reveal_sets_idx
  on public.secret_events (user_id, secret_types, occurred_at) where action = 'reveal';

alter table public.secret_events enable row level security;
alter table public.secret_events force row level security;
revoke all on public.secret_events from public, anon, authenticated;
grant all on public.secret_events to service_role;
-- Supabase grants new sequences to the API roles by default; the trail's ids are no one's.
do $$
begin
  execute format('revoke all on sequence %s from public, anon, authenticated',
    pg_get_serial_sequence('public.secret_events', 'id'));
end
$$;

grant select on public.secret_events to authenticated;
create policy secret_events_owner_read on public.secret_events
  for select to authenticated
  using (user_id = (select auth.uid()) and (select public.session_is_live()));

-- Writes and deletes of the vault are audited by the database itself, so no code path can forget
-- to. A first save is 'put', a later one 'replace'; a key rotation re-encrypts without moving
-- updated_at, which tells it apart from a replacement.
create function public.audit_user_secret_change() returns trigger
  language plpgsql security definer set search_path = public, pg_temp
  as $$
  begin
    if tg_op = 'DELETE' then
      insert into public.secret_events (user_id, secret_types, action)
        values (old.user_id, array[old.secret_type], 'delete');
      return old;
    end if;
    insert into public.secret_events (user_id, secret_types, action)
      values (
        new.user_id, array[new.secret_type],
        case
          when tg_op = 'INSERT' then 'put'
          when new.updated_at = old.updated_at then 'rotate'
          else 'replace'
        end
      );
    return new;
  end
  $$;
create trigger user_secrets_audit
  after insert or update or delete on public.user_secrets
  for each row execute function public.audit_user_secret_change();

-- After a recorded reveal, the types whose decryption then failed (the answer released nothing),
-- as one event. The session must be the creator's, but need not be live any more: what happened is
-- recorded. Returns the number of events written: 1, or 0 when the session is not the creator's or
-- no type is named.
create function public.record_reveal_failure(
  session_id uuid, user_id uuid, secret_types text[]
)
  returns integer
  language sql security definer set search_path = pg_catalog, pg_temp
  as $$
    with recorded as (
      insert into public.secret_events (user_id, secret_types, action)
        select s.user_id, record_reveal_failure.secret_types, 'reveal_failed'
          from public.auth_sessions s
         where s.id = record_reveal_failure.session_id
           and s.user_id = record_reveal_failure.user_id
           and cardinality(record_reveal_failure.secret_types) > 0
      returning 1
    )
    select count(*)::integer from recorded
  $$;

-- A reveal refused for a missing or wrong server token, before anything is read: guesses must meet
-- a limit and leave a trace. Counts the try against `client_bucket` (the client address's budget)
-- and, while that count is at most one over `refusal_limit` and `session_id` names a live session
-- of `user_id`, against that creator's budget too; while that count is also at most one over the
-- limit, records a 'reveal_refused' event naming no type for the creator. Refusals past the first
-- one over either limit are counted but not recorded, so neither one client nor many (every /64 of
-- an IPv6 block is a client) can grow a creator's trail without bound. The caller passes null for
-- the session when the request carried no valid one. Returns the client's count in the window, the
-- seconds left in it, and whether an event was written.
create function public.refuse_reveal(
  client_bucket text, refusal_limit integer, window_seconds integer, session_id uuid, user_id uuid
)
  returns table (hits integer, retry_after integer, recorded boolean)
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  #variable_conflict use_column
  declare
    attempt record;
    creator_hits integer;
  begin
    select * into attempt
      from public.hit_rate_limit(refuse_reveal.client_bucket, refuse_reveal.window_seconds);
    if refuse_reveal.session_id is not null and attempt.hits <= refuse_reveal.refusal_limit + 1
      and public.session_is_live_for(refuse_reveal.session_id, refuse_reveal.user_id) then
      select limited.hits into creator_hits from public.hit_rate_limit(
        'vault:reveal:refused:user:' || refuse_reveal.user_id, refuse_reveal.window_seconds
      ) limited;
      if creator_hits <= refuse_reveal.refusal_limit + 1 then
        insert into public.secret_events (user_id, secret_types, action)
          values (refuse_reveal.user_id, '{}', 'reveal_refused');
        return query select attempt.hits, greatest(1, attempt.retry_after), true;
        return;
      end if;
    end if;
    return query select attempt.hits, greatest(1, attempt.retry_after), false;
  end
  $$;

-- A page of the creator's audit trail, newest first, read as the creator under row-level security,
-- after the event `before_id` (the previous page's last; null for the first page). An event id
-- that is not the creator's reads nothing. No row: the session is checked, as in
-- public.list_user_secrets, to tell an ended session (one row, live = false) from the end of the
-- trail (no row).
create function public.list_secret_events(
  claims text, session_id uuid, user_id uuid, before_id bigint, page_size integer
)
  returns table (
    live boolean, id bigint, occurred_at timestamptz, action text, secret_types text[], reason text
  )
  language plpgsql set search_path = pg_catalog, pg_temp
  as $$
  declare
    caller text := public.act_as_creator(list_secret_events.claims);
  begin
    if list_secret_events.before_id is null then
      return query
        select true, e.id, e.occurred_at, e.action, e.secret_types, e.reason
          from public.secret_events e
         where e.user_id = list_secret_events.user_id
         order by e.occurred_at desc, e.id desc
         limit list_secret_events.page_size;
    else
      return query
        select true, e.id, e.occurred_at, e.action, e.secret_types, e.reason
          from public.secret_events c, public.secret_events e
         where c.id = list_secret_events.before_id and c.user_id = list_secret_events.user_id
           and e.user_id = list_secret_events.user_id and e.occurred_at <= c.occurred_at
           and (e.occurred_at < c.occurred_at or e.id < c.id)
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
        null::text;
    end if;
  end
  $$;

-- The service's alone: Supabase grants new functions to the API roles by default.
revoke all on function public.audit_user_secret_change() from public, anon, authenticated;
revoke all on function public.record_reveal_failure(uuid, uuid, text[])
  from public, anon, authenticated;
revoke all on function public.refuse_reveal(text, integer, integer, uuid, uuid)
  from public, anon, authenticated;
revoke all on function public.list_secret_events(text, uuid, uuid, bigint, integer)
  from public, anon, authenticated;
grant execute on function public.record_reveal_failure(uuid, uuid, text[]) to service_role;
grant execute on function public.refuse_reveal(text, integer, integer, uuid, uuid) to service_role;
grant execute on function public.list_secret_events(text, uuid, uuid, bigint, integer)
  to service_role;
