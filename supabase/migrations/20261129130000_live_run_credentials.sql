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

-- The reveal of 20261126100500_vault.sql, with the live-run credential checked in the same
-- statement (issue 42: the lines marked "credential"). `credential_hash` is the SHA-256 of the
-- presented credential; null (the default, which the calls written before credentials make) only
-- when the caller matched the deprecated SERVER_REVEAL_TOKEN itself, which reveals every type and
-- names no credential in its events (they read as every event before credentials did).
-- `every_type`: the request named no types, so `secret_types` is every type and the reveal asks
-- for those the credential may reveal. Outcomes added: 'credential_refused'
-- (unknown, revoked or expired: nothing counted, read or recorded here; the caller counts it
-- against the client's budget), 'out_of_scope' (within the creator's limit, recorded as a refused
-- reveal naming the types asked for), 'credential_rate_limited' (past the credential's own
-- limit). Every row carries the credential's name (null for the legacy token), for the caller's
-- logs.
drop function public.reveal_user_secrets(uuid, uuid, text[], text, integer, integer, integer);
create function public.reveal_user_secrets(
  session_id uuid, user_id uuid, secret_types text[], token_bucket text, creator_limit integer,
  token_limit integer, window_seconds integer, credential_hash bytea default null,
  every_type boolean default false
)
  returns table (
    outcome text, secret_type text, ciphertext bytea, iv bytea, key_id text, updated_at timestamptz,
    retry_after integer, credential_name text
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
          null::text, null::timestamptz, null::integer, null::text;
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
       and s.revoked_at is null and s.expires_at > now();
    if not found then
      return query select 'session_revoked'::text, null::text, null::bytea, null::bytea, null::text,
        null::timestamptz, null::integer, credential;
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
          null::timestamptz, null::integer, credential;
        return;
      end if;
      -- credential: a type outside its scope refuses the whole reveal, and the trail says so
      if scope is not null and not (reveal_user_secrets.secret_types <@ scope) then
        insert into public.secret_events (user_id, secret_types, action, reason, credential_name)
          values (reveal_user_secrets.user_id, reveal_user_secrets.secret_types, 'reveal_refused',
            'out_of_scope', credential);
        return query select 'out_of_scope'::text, null::text, null::bytea, null::bytea,
          null::text, null::timestamptz, null::integer, credential;
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
          )
          select 'revealed'::text, r.secret_type, r.ciphertext, r.iv, r.key_id, r.updated_at,
                 null::integer, credential
            from revealed r order by r.position;
        return;
      end if;
      -- credential: past its own limit (a leaked one used for mass reveal), told apart for the log
      return query select 'credential_rate_limited'::text, null::text, null::bytea, null::bytea,
        null::text, null::timestamptz, greatest(1, attempt.retry_after), credential;
      return;
    end if;
    return query select 'rate_limited'::text, null::text, null::bytea, null::bytea, null::text,
      null::timestamptz, greatest(1, attempt.retry_after), credential;
  end
  $$;

-- The masked list of 20261126100500_vault.sql, with the credential of each secret's last use
-- (issue 42: the lines marked "credential"): the name on the latest reveal naming it since it was
-- saved; null if never used, or last used by the legacy token or before credentials.
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
      with recursive revealed_lists as (
        (select e.secret_types from public.secret_events e
          where e.user_id = list_user_secrets.user_id and e.action = 'reveal'
          order by e.secret_types limit 1)
        union all
        select (select e.secret_types from public.secret_events e
                 where e.user_id = list_user_secrets.user_id and e.action = 'reveal'
                   and e.secret_types > r.secret_types
                 order by e.secret_types limit 1)
          from revealed_lists r where r.secret_types is not null
      ), last_reveals as materialized (
        select r.secret_types,
               (select max(e.occurred_at) from public.secret_events e
                 where e.user_id = list_user_secrets.user_id and e.action = 'reveal'
                   and e.secret_types = r.secret_types) as occurred_at
          from revealed_lists r where r.secret_types is not null
      ), named_reveals as materialized (
        -- credential: the name on each list's latest reveal, found by its creator and time
        select l.secret_types, l.occurred_at,
               (select e.credential_name from public.secret_events e
                 where e.user_id = list_user_secrets.user_id and e.action = 'reveal'
                   and e.secret_types = l.secret_types and e.occurred_at = l.occurred_at
                 order by e.id desc limit 1) as credential_name
          from last_reveals l
      )
      select true, s.secret_type, s.updated_at, s.hint,
             (select max(l.occurred_at) from last_reveals l
               where s.secret_type = any(l.secret_types) and l.occurred_at >= s.updated_at),
             -- credential: who made that last use
             (select n.credential_name from named_reveals n
               where s.secret_type = any(n.secret_types) and n.occurred_at >= s.updated_at
               order by n.occurred_at desc limit 1)
        from public.user_secrets s
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

-- The trail's page of 20261126100600_audit.sql, with each event's credential name (issue 42: the
-- column marked "credential"); null for events no credential made.
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
  begin
    if list_secret_events.before_id is null then
      return query
        select true, e.id, e.occurred_at, e.action, e.secret_types, e.reason,
               e.credential_name -- credential
          from public.secret_events e
         where e.user_id = list_secret_events.user_id
         order by e.occurred_at desc, e.id desc
         limit list_secret_events.page_size;
    else
      return query
        select true, e.id, e.occurred_at, e.action, e.secret_types, e.reason,
               e.credential_name -- credential
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
        null::text, null::text;
    end if;
  end
  $$;

-- The service's alone: Supabase grants new functions to the API roles by default.
revoke all on function public.reveal_user_secrets(uuid, uuid, text[], text, integer, integer,
  integer, bytea, boolean) from public, anon, authenticated;
revoke all on function public.list_secret_events(text, uuid, uuid, bigint, integer)
  from public, anon, authenticated;
revoke all on function public.list_user_secrets(text, uuid, uuid, text[])
  from public, anon, authenticated;
grant execute on function public.reveal_user_secrets(uuid, uuid, text[], text, integer, integer,
  integer, bytea, boolean) to service_role;
grant execute on function public.list_secret_events(text, uuid, uuid, bigint, integer)
  to service_role;
grant execute on function public.list_user_secrets(text, uuid, uuid, text[]) to service_role;
