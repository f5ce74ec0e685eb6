-- Live-run credentials (issue 42): one per live-run service, named, scoped to the secret types it
-- may reveal, with an optional expiry. Only a SHA-256 of each credential is stored: a credential is
-- 214 random bits, so a plain hash cannot be reversed, and a lookup by hash compares nothing in
-- the open. Operators manage them with `deno task credentials:*` (scripts/credentials.ts); the
-- reveal checks the presented one in its own statement, so a revocation holds from the next reveal.

create table public.live_run_credentials (
  id uuid primary key default gen_random_uuid(),
  -- 'legacy' is what the logs call SERVER_REVEAL_TOKEN (reveal.ts): never a row's name.
  name text not null check (name ~ '^[a-z0-9][a-z0-9._-]{0,62}$' and name <> 'legacy'),
  secret_types text[] not null check (
    cardinality(secret_types) > 0 and array_ndims(secret_types) = 1
    and array_position(secret_types, null) is null
    and secret_types <@ array['provider_a_api_key', 'provider_a_org_id', 'provider_b_key',
      'provider_c_key', 'provider_d_key', 'provider_e_key', 'provider_f_api_key']::text[]
  ),
  token_hash bytea not null unique check (length(token_hash) = 32),
  created_at timestamptz not null default now(),
  -- A rotation sets the predecessor's expiry to the end of its grace period.
  expires_at timestamptz,
  revoked_at timestamptz,
  -- The credential this one succeeded (rotation); null for one added.
  rotated_from uuid references public.live_run_credentials (id) on delete set null
);
create index live_run_credentials_name_idx on public.live_run_credentials (name, created_at);

alter table public.live_run_credentials enable row level security;
alter table public.live_run_credentials force row level security;
revoke all on public.live_run_credentials from public, anon, authenticated;
grant all on public.live_run_credentials to service_role;

-- Each reveal event names the credential that made it (its name, never the credential); events
-- written before credentials existed have none and read as before. A reveal asking for a type
-- outside its credential's scope is refused as 'out_of_scope'.
alter table public.secret_events add column credential_name text;
alter table public.secret_events drop constraint secret_events_reason_check;
alter table public.secret_events add constraint secret_events_reason_check
  check (reason is null or (action = 'reveal_refused' and reason in ('vault_locked',
    'out_of_scope')));

-- Each key's last release names its credential too, so the list can say by whom; a reveal taken
-- back after a failed decryption restores the name with the time.
alter table public.secret_last_reveals add column credential_name text,
  add column previous_credential_name text;
grant select (credential_name) on public.secret_last_reveals to authenticated;

create or replace function public.note_last_reveal() returns trigger
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

create or replace function public.record_reveal_failure(
  session_id uuid, user_id uuid, secret_types text[], reveal_event_id bigint
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
      returning user_id
    ), taken_back as (
      update public.secret_last_reveals l
         set revealed_at = case when l.event_id = record_reveal_failure.reveal_event_id
               then l.previous_revealed_at else l.revealed_at end,
             credential_name = case when l.event_id = record_reveal_failure.reveal_event_id
               then l.previous_credential_name else l.credential_name end,
             event_id = case when l.event_id = record_reveal_failure.reveal_event_id
               then l.previous_event_id else l.event_id end,
             previous_revealed_at = null, previous_event_id = null,
             previous_credential_name = null
        from recorded r
       where l.user_id = r.user_id
         and record_reveal_failure.reveal_event_id in (l.event_id, l.previous_event_id)
    )
    select count(*)::integer from recorded
  $$;

-- The reveal of 20261129110100_reveal_retention.sql, with the live-run credential checked in the
-- same statement (the lines marked "credential"). `credential_hash` is the SHA-256 of the
-- presented credential; null only when the caller matched the deprecated SERVER_REVEAL_TOKEN
-- itself, which reveals every type and names no credential in its events (they read as every
-- event before credentials did). `every_type`: the request named no types, so `secret_types` is
-- every type and the reveal asks for those the credential may reveal. Outcomes added:
-- 'credential_refused' (unknown, revoked or expired: nothing counted, read or recorded here; the
-- caller counts it against the client's budget), 'out_of_scope' (within the creator's limit,
-- recorded as a refused reveal naming the types asked for), 'credential_rate_limited' (past the
-- credential's own limit). Every row carries the credential's name (null for the legacy token),
-- for the caller's logs, and, when revealed, the reveal event's id.
drop function public.reveal_user_secrets(uuid, uuid, text[], text, integer, integer, integer,
  integer);
create function public.reveal_user_secrets(
  session_id uuid, user_id uuid, secret_types text[], token_bucket text, creator_limit integer,
  token_limit integer, window_seconds integer, credential_hash bytea default null,
  every_type boolean default false, retention_days integer default null
)
  returns table (
    outcome text, secret_type text, ciphertext bytea, iv bytea, key_id text, updated_at timestamptz,
    retry_after integer, credential_name text, event_id bigint
  )
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  #variable_conflict use_column
  declare
    attempt record;
    locked boolean;
    -- credential: its name and scope; none for the legacy token, whose events read as before
    credential text := null;
    scope text[] := null;
  begin
    -- credential: live, unexpired, unrevoked, or refused before anything else is looked at
    if reveal_user_secrets.credential_hash is not null then
      select c.name, c.secret_types into credential, scope
        from public.live_run_credentials c
       where c.token_hash = reveal_user_secrets.credential_hash and c.revoked_at is null
         and (c.expires_at is null or c.expires_at > now());
      if not found then
        return query select 'credential_refused'::text, null::text, null::bytea, null::bytea,
          null::text, null::timestamptz, null::integer, null::text, null::bigint;
        return;
      end if;
      if reveal_user_secrets.every_type then
        reveal_user_secrets.secret_types := array(
          select t from unnest(reveal_user_secrets.secret_types) with ordinality as u (t, n)
           where t = any(scope) order by n);
      end if;
    end if;
    select u.reveals_locked_at is not null into locked
      from public.auth_sessions s join public.wallet_users u on u.id = s.user_id
     where s.id = reveal_user_secrets.session_id and s.user_id = reveal_user_secrets.user_id
       and public.auth_session_is_live(s.revoked_at, s.expires_at);
    if not found then
      return query select 'session_revoked'::text, null::text, null::bytea, null::bytea, null::text,
        null::timestamptz, null::integer, credential, null::bigint;
      return;
    end if;
    select * into attempt from public.hit_rate_limit(
      'vault:reveal:user:' || reveal_user_secrets.user_id, reveal_user_secrets.window_seconds);
    if attempt.hits <= reveal_user_secrets.creator_limit then
      if locked then
        insert into public.secret_events (user_id, secret_types, action, reason, credential_name)
          values (reveal_user_secrets.user_id, reveal_user_secrets.secret_types, 'reveal_refused',
            'vault_locked', credential);
        return query select 'vault_locked'::text, null::text, null::bytea, null::bytea, null::text,
          null::timestamptz, null::integer, credential, null::bigint;
        return;
      end if;
      -- credential: a type outside its scope refuses the whole reveal, and the trail says so
      if scope is not null and not (reveal_user_secrets.secret_types <@ scope) then
        insert into public.secret_events (user_id, secret_types, action, reason, credential_name)
          values (reveal_user_secrets.user_id, reveal_user_secrets.secret_types, 'reveal_refused',
            'out_of_scope', credential);
        return query select 'out_of_scope'::text, null::text, null::bytea, null::bytea,
          null::text, null::timestamptz, null::integer, credential, null::bigint;
        return;
      end if;
      select * into attempt from public.hit_rate_limit(
        'vault:reveal:token:' || reveal_user_secrets.token_bucket,
        reveal_user_secrets.window_seconds);
      if attempt.hits <= reveal_user_secrets.token_limit then
        return query
          with revealed as (
            select s.user_id, s.secret_type, s.ciphertext, s.iv, s.key_id, s.updated_at,
                   array_position(reveal_user_secrets.secret_types, s.secret_type) as position
              from public.user_secrets s
             where s.user_id = reveal_user_secrets.user_id
               and s.secret_type = any(reveal_user_secrets.secret_types)
          ), audited as (
            insert into public.secret_events (user_id, secret_types, action, credential_name)
              select r.user_id, array_agg(r.secret_type order by r.position), 'reveal', credential
                from revealed r group by r.user_id
            returning id
          )
          select 'revealed'::text, r.secret_type, r.ciphertext, r.iv, r.key_id, r.updated_at,
                 null::integer, credential, (select a.id from audited a)
            from revealed r order by r.position;
        -- The trail's growth pays for its own expiry, a few rows at a time.
        if reveal_user_secrets.retention_days is not null then
          perform public.expire_secret_events(reveal_user_secrets.retention_days);
        end if;
        return;
      end if;
      -- credential: past its own limit (a leaked one used for mass reveal), told apart for the log
      return query select 'credential_rate_limited'::text, null::text, null::bytea, null::bytea,
        null::text, null::timestamptz, greatest(1, attempt.retry_after), credential, null::bigint;
      return;
    end if;
    return query select 'rate_limited'::text, null::text, null::bytea, null::bytea, null::text,
      null::timestamptz, greatest(1, attempt.retry_after), credential, null::bigint;
  end
  $$;

-- The masked list of 20261129110000_last_reveals.sql, with the credential of each secret's last
-- release: the name on its secret_last_reveals row (null if never used, or last used by the legacy
-- token or before credentials).
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


-- The trail's page of 20261129110200_activity_pages.sql, with each event's credential name; null
-- for events no credential made.
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
revoke all on function public.reveal_user_secrets(uuid, uuid, text[], text, integer, integer,
  integer, bytea, boolean, integer) from public, anon, authenticated;
revoke all on function public.list_secret_events(text, uuid, uuid, bigint, integer)
  from public, anon, authenticated;
revoke all on function public.list_user_secrets(text, uuid, uuid, text[])
  from public, anon, authenticated;
grant execute on function public.reveal_user_secrets(uuid, uuid, text[], text, integer, integer,
  integer, bytea, boolean, integer) to service_role;
grant execute on function public.list_secret_events(text, uuid, uuid, bigint, integer)
  to service_role;
grant execute on function public.list_user_secrets(text, uuid, uuid, text[]) to service_role;
