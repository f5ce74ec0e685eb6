-- The reveal checks its live-run credential, names its event to the caller (so a decryption failure
-- takes back exactly that reveal's last use), and expires a bounded number of old events as it
-- records its own (the operator's retention, AUDIT_RETENTION_DAYS).

-- Deletes at most 16 events older than `retention_days` (null: kept forever), oldest first, among
-- the 16 lowest ids: ids follow insertion, so the expired ones are there, and the read is bounded
-- however long the trail. Rows another transaction is deleting are skipped, never waited on.
-- PL/pgSQL so each connection keeps the delete's plan: a SQL function with its own search_path is
-- planned again at every call, which cost a reveal more than the delete itself.
create function public.expire_secret_events(retention_days integer) returns void
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  begin
    delete from public.secret_events e
     where e.id in (
       select o.id from public.secret_events o
        where o.id = any(array(select h.id from public.secret_events h order by h.id limit 16))
          and o.occurred_at < now() - make_interval(days => expire_secret_events.retention_days)
        for update skip locked);
  end
  $$;

-- The reveal of 20261126100500_vault.sql, with its rate-limit buckets handed in (config/limits.ts),
-- the live-run credential checked in the same statement (the lines marked "credential"), the reveal
-- event's id returned (so a decryption failure takes back exactly that reveal's last use), and a
-- few expired events deleted with each recorded reveal (`retention_days`, AUDIT_RETENTION_DAYS;
-- null: kept forever). `credential_hash` is the SHA-256 of the presented credential; null only when
-- the caller matched the deprecated SERVER_REVEAL_TOKEN itself, which reveals every type and names
-- no credential in its events (they read as every event before credentials did). `every_type`: the
-- request named no types, so `secret_types` is every type and the reveal asks for those the
-- credential may reveal. Outcomes added: 'credential_refused' (unknown, revoked or expired: nothing
-- counted, read or recorded here; the caller counts it against the client's budget), 'out_of_scope'
-- (within the creator's limit, recorded as a refused reveal naming the types asked for),
-- 'credential_rate_limited' (past the credential's own limit). Every row carries the credential's
-- name (null for the legacy token), for the caller's logs, and, when revealed, the reveal event's
-- id.
drop function public.reveal_user_secrets(uuid, uuid, text[], text, integer, integer, integer);
create function public.reveal_user_secrets(
  session_id uuid, user_id uuid, secret_types text[], token_bucket text, creator_bucket_prefix text,
  creator_limit integer, token_bucket_prefix text, token_limit integer, window_seconds integer,
  credential_hash bytea default null, every_type boolean default false,
  retention_days integer default null
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
      reveal_user_secrets.creator_bucket_prefix || reveal_user_secrets.user_id,
        reveal_user_secrets.window_seconds);
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
        reveal_user_secrets.token_bucket_prefix || reveal_user_secrets.token_bucket,
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

drop function public.record_reveal_failure(uuid, uuid, text[]);

-- After a recorded reveal (`reveal_event_id`, its event), the types whose decryption then failed
-- (the answer released nothing), as one event; and the reveal no longer counts as any type's last
-- use: rows still pointing at it go back to the release before, and a row whose release before was
-- this one forgets it (only one is kept). The session must be the creator's, but need not be live
-- any more: what happened is recorded. Returns the number of events written: 1, or 0 when the
-- session is not the creator's or no type is named (then nothing is taken back either).
create function public.record_reveal_failure(
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

-- The service's alone: Supabase grants new functions to the API roles by default.
revoke all on function public.expire_secret_events(integer) from public, anon, authenticated;
revoke all on function public.reveal_user_secrets(uuid, uuid, text[], text, text, integer, text,
  integer, integer, bytea, boolean, integer) from public, anon, authenticated;
revoke all on function public.record_reveal_failure(uuid, uuid, text[], bigint)
  from public, anon, authenticated;
grant execute on function public.reveal_user_secrets(uuid, uuid, text[], text, text, integer, text,
  integer, integer, bytea, boolean, integer) to service_role;
grant execute on function public.record_reveal_failure(uuid, uuid, text[], bigint)
  to service_role;
