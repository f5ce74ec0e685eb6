-- The vault: one row per creator and secret type, ciphertext only. A creator's token reads its own
-- rows' masked columns, and only while its session is live; it writes nothing. Every write and
-- reveal goes through a checked function that only the service's own connection may execute: each
-- checks the session itself and counts the request against its limits in the same transaction.
-- Everything names its schema, so nothing depends on the caller's search_path.

create table public.user_secrets (
  user_id uuid not null default auth.uid() references public.wallet_users (id) on delete cascade,
  secret_type text not null check (secret_type in (
    'provider_a_api_key', 'provider_a_org_id', 'provider_b_key', 'provider_c_key',
    'provider_d_key', 'provider_e_key', 'provider_f_api_key'
  )),
  ciphertext bytea not null check (length(ciphertext) >= 16),
  iv bytea not null check (length(iv) = 12),
  key_id text not null check (key_id ~ '^[A-Za-z0-9_-]{1,32}$'),
  -- "…" and the last four characters, only for values of 16 characters or more.
  hint text check (hint is null or char_length(hint) = 5),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (user_id, secret_type)
);
create index user_secrets_key_id_idx on public.user_secrets (key_id);

alter table public.user_secrets enable row level security;
alter table public.user_secrets force row level security;
revoke all on public.user_secrets from public, anon, authenticated;
grant all on public.user_secrets to service_role;

-- What a creator's own token may read: the masked metadata, never the ciphertext, IV or key id.
-- Such tokens are valid at PostgREST when JWT_SECRET is the project's, and nothing needs more: the
-- list reads type, time and hint; reveal, writes and key rotation run as the functions' owner or
-- service_role. The sub-selects make Postgres evaluate each function once per statement.
grant select (user_id, secret_type, hint, created_at, updated_at) on public.user_secrets
  to authenticated;
create policy user_secrets_owner_read on public.user_secrets
  for select to authenticated
  using (user_id = (select auth.uid()) and (select public.session_is_live()));

-- Stores one ciphertext the service made, for a live session's creator. Outcomes: 'stored' (with
-- updated_at and whether the row is new), 'session_revoked' (nothing counted or written),
-- 'rate_limited' (with retry_after; the hit is counted, nothing written).
create function public.put_user_secret(
  session_id uuid, user_id uuid, secret_type text, ciphertext bytea, iv bytea, key_id text,
  hint text, write_limit integer, window_seconds integer
)
  returns table (outcome text, updated_at timestamptz, created boolean, retry_after integer)
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  #variable_conflict use_column
  declare
    attempt record;
    stored_at timestamptz;
    is_new boolean;
  begin
    if not public.session_is_live_for(put_user_secret.session_id, put_user_secret.user_id) then
      return query select 'session_revoked'::text, null::timestamptz, null::boolean, null::integer;
      return;
    end if;
    select * into attempt from public.hit_rate_limit(
      'vault:write:' || put_user_secret.user_id, put_user_secret.window_seconds);
    if attempt.hits > put_user_secret.write_limit then
      return query select 'rate_limited'::text, null::timestamptz, null::boolean,
        greatest(1, attempt.retry_after);
      return;
    end if;
    -- updated_at always moves forward on a replace, even if the clock stepped back, so the audit
    -- trigger tells a creator's replacement from a key rotation (which keeps updated_at).
    insert into public.user_secrets as s (user_id, secret_type, ciphertext, iv, key_id, hint)
      values (put_user_secret.user_id, put_user_secret.secret_type, put_user_secret.ciphertext,
        put_user_secret.iv, put_user_secret.key_id, put_user_secret.hint)
    on conflict (user_id, secret_type) do update
      set ciphertext = excluded.ciphertext, iv = excluded.iv, key_id = excluded.key_id,
          hint = excluded.hint,
          updated_at = greatest(now(), s.updated_at + interval '1 microsecond')
    returning s.updated_at, (s.xmax = 0) into stored_at, is_new;
    return query select 'stored'::text, stored_at, is_new, null::integer;
  end
  $$;

-- Deletes one of a live session's creator's secrets. Outcomes: 'deleted', 'not_found',
-- 'session_revoked', 'rate_limited' (the same per-creator limit as put_user_secret).
create function public.delete_user_secret(
  session_id uuid, user_id uuid, secret_type text, write_limit integer, window_seconds integer
)
  returns table (outcome text, retry_after integer)
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  #variable_conflict use_column
  declare
    attempt record;
  begin
    if not public.session_is_live_for(delete_user_secret.session_id, delete_user_secret.user_id) then
      return query select 'session_revoked'::text, null::integer;
      return;
    end if;
    select * into attempt from public.hit_rate_limit(
      'vault:write:' || delete_user_secret.user_id, delete_user_secret.window_seconds);
    if attempt.hits > delete_user_secret.write_limit then
      return query select 'rate_limited'::text, greatest(1, attempt.retry_after);
      return;
    end if;
    delete from public.user_secrets s
     where s.user_id = delete_user_secret.user_id and s.secret_type = delete_user_secret.secret_type;
    return query select case when found then 'deleted' else 'not_found' end, null::integer;
  end
  $$;

-- The masked list, read as the creator under row-level security, each secret with its last use:
-- the latest reveal naming it since it was saved (a replacement starts again from never). The
-- read comes first: a row it returns has passed the policy's live-session check, so the session
-- is checked again only when the read finds nothing, back in the caller's role, to tell "nothing
-- stored" (no row) from "session ended" (one row, live = false). The caller passes `claims`, `session_id` and
-- `user_id` from one verified token. A reveal names its types in the order every list uses, so a
-- creator's reveals name few distinct type lists (at most 2^7): the last use steps through them on
-- secret_events_reveal_sets_idx (one index descent each) and takes each list's latest reveal,
-- whatever the trail's length.
create function public.list_user_secrets(
  claims text, session_id uuid, user_id uuid, secret_types text[]
)
  returns table (
    live boolean, secret_type text, updated_at timestamptz, hint text, last_used_at timestamptz
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
      )
      select true, s.secret_type, s.updated_at, s.hint,
             (select max(l.occurred_at) from last_reveals l
               where s.secret_type = any(l.secret_types) and l.occurred_at >= s.updated_at)
        from public.user_secrets s
       where s.user_id = list_user_secrets.user_id
       order by array_position(list_user_secrets.secret_types, s.secret_type);
    if found then
      return;
    end if;
    perform set_config('role', caller, true);
    if not public.session_is_live_for(list_user_secrets.session_id, list_user_secrets.user_id) then
      return query select false, null::text, null::timestamptz, null::text, null::timestamptz;
    end if;
  end
  $$;

-- A reveal's read and its audit event in one statement, so one snapshot: the event names every
-- type read and is written in the caller's transaction, committed before the caller can decrypt or
-- release anything. Rows come back in the order of `secret_types`. Counted per creator, then per
-- server token (`token_bucket`, which names the token without being it): a creator past its own
-- limit spends none of the token's budget. Outcomes: an ended session, one row 'session_revoked';
-- past a limit, one row 'rate_limited' with retry_after, nothing read; a locked creator within its
-- own limit, one row 'vault_locked', recorded as a refused reveal naming the types asked for (past
-- the limit it is not recorded, so a live run hammering a locked vault grows the trail no faster
-- than reveals would); otherwise one row 'revealed' per stored type asked for (none: no event).
create function public.reveal_user_secrets(
  session_id uuid, user_id uuid, secret_types text[], token_bucket text, creator_limit integer,
  token_limit integer, window_seconds integer
)
  returns table (
    outcome text, secret_type text, ciphertext bytea, iv bytea, key_id text, updated_at timestamptz,
    retry_after integer
  )
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  #variable_conflict use_column
  declare
    attempt record;
    locked boolean;
  begin
    select u.reveals_locked_at is not null into locked
      from public.auth_sessions s join public.wallet_users u on u.id = s.user_id
     where s.id = reveal_user_secrets.session_id and s.user_id = reveal_user_secrets.user_id
       and s.revoked_at is null and s.expires_at > now();
    if not found then
      return query select 'session_revoked'::text, null::text, null::bytea, null::bytea, null::text,
        null::timestamptz, null::integer;
      return;
    end if;
    select * into attempt from public.hit_rate_limit(
      'vault:reveal:user:' || reveal_user_secrets.user_id, reveal_user_secrets.window_seconds);
    if attempt.hits <= reveal_user_secrets.creator_limit then
      if locked then
        insert into public.secret_events (user_id, secret_types, action, reason)
          values (reveal_user_secrets.user_id, reveal_user_secrets.secret_types, 'reveal_refused',
            'vault_locked');
        return query select 'vault_locked'::text, null::text, null::bytea, null::bytea, null::text,
          null::timestamptz, null::integer;
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
            insert into public.secret_events (user_id, secret_types, action)
              select r.user_id, array_agg(r.secret_type order by r.position), 'reveal'
                from revealed r group by r.user_id
          )
          select 'revealed'::text, r.secret_type, r.ciphertext, r.iv, r.key_id, r.updated_at,
                 null::integer
            from revealed r order by r.position;
        return;
      end if;
    end if;
    return query select 'rate_limited'::text, null::text, null::bytea, null::bytea, null::text,
      null::timestamptz, greatest(1, attempt.retry_after);
  end
  $$;

-- Locks live-run access with the session alone (a stolen session can lock, never unlock). Counted
-- in a budget of its own, so writes from a stolen session cannot keep the owner from locking
-- (the limit is the vault writes' number). Outcomes: 'locked' with when (the first lock's time when already locked),
-- 'session_revoked', 'rate_limited'. A lock that changes something is a 'lock' event.
create function public.lock_reveals(
  session_id uuid, user_id uuid, write_limit integer, window_seconds integer
)
  returns table (outcome text, locked_at timestamptz, retry_after integer)
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  declare
    attempt record;
    since timestamptz;
  begin
    if not public.session_is_live_for(lock_reveals.session_id, lock_reveals.user_id) then
      return query select 'session_revoked'::text, null::timestamptz, null::integer;
      return;
    end if;
    select * into attempt from public.hit_rate_limit(
      'vault:lock:' || lock_reveals.user_id, lock_reveals.window_seconds);
    if attempt.hits > lock_reveals.write_limit then
      return query select 'rate_limited'::text, null::timestamptz, greatest(1, attempt.retry_after);
      return;
    end if;
    update public.wallet_users u set reveals_locked_at = now()
     where u.id = lock_reveals.user_id and u.reveals_locked_at is null
    returning u.reveals_locked_at into since;
    if found then
      insert into public.secret_events (user_id, secret_types, action)
        values (lock_reveals.user_id, '{}', 'lock');
    else
      select u.reveals_locked_at into since from public.wallet_users u
       where u.id = lock_reveals.user_id;
    end if;
    return query select 'locked'::text, since, null::integer;
  end
  $$;

-- Unlocks live-run access with a fresh signature (purpose 'unlock'). Outcomes: 'unlocked' (also
-- when it was not locked), or spend_confirmation's refusal. An unlock that changes something is an
-- 'unlock' event.
create function public.unlock_reveals(
  session_id uuid, user_id uuid, nonce text, wallet_address text, message_chain_id bigint,
  identity_chain_id bigint, creator_limit integer, window_seconds integer
)
  returns table (outcome text, retry_after integer)
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  declare
    spent record;
  begin
    select * into spent from public.spend_confirmation(session_id, user_id, 'unlock',
      nonce, wallet_address, message_chain_id, identity_chain_id, creator_limit, window_seconds);
    if spent.refusal is not null then
      return query select spent.refusal, spent.retry_after;
      return;
    end if;
    update public.wallet_users u set reveals_locked_at = null
     where u.id = unlock_reveals.user_id and u.reveals_locked_at is not null;
    if found then
      insert into public.secret_events (user_id, secret_types, action)
        values (unlock_reveals.user_id, '{}', 'unlock');
    end if;
    return query select 'unlocked'::text, null::integer;
  end
  $$;

-- The service's alone: Supabase grants new functions to the API roles by default.
revoke all on function public.put_user_secret(uuid, uuid, text, bytea, bytea, text, text, integer,
  integer) from public, anon, authenticated;
revoke all on function public.delete_user_secret(uuid, uuid, text, integer, integer)
  from public, anon, authenticated;
revoke all on function public.list_user_secrets(text, uuid, uuid, text[])
  from public, anon, authenticated;
revoke all on function public.reveal_user_secrets(uuid, uuid, text[], text, integer, integer,
  integer) from public, anon, authenticated;
revoke all on function public.lock_reveals(uuid, uuid, integer, integer)
  from public, anon, authenticated;
revoke all on function public.unlock_reveals(uuid, uuid, text, text, bigint, bigint, integer,
  integer) from public, anon, authenticated;
grant execute on function public.put_user_secret(uuid, uuid, text, bytea, bytea, text, text,
  integer, integer) to service_role;
grant execute on function public.delete_user_secret(uuid, uuid, text, integer, integer)
  to service_role;
grant execute on function public.list_user_secrets(text, uuid, uuid, text[]) to service_role;
grant execute on function public.reveal_user_secrets(uuid, uuid, text[], text, integer, integer,
  integer) to service_role;
grant execute on function public.lock_reveals(uuid, uuid, integer, integer) to service_role;
grant execute on function public.unlock_reveals(uuid, uuid, text, text, bigint, bigint, integer,
  integer) to service_role;
