-- The reveal now names its event to the caller (so a decryption failure takes back exactly that
-- reveal's last use), and expires a bounded number of old events as it records its own (the
-- operator's retention, AUDIT_RETENTION_DAYS).

-- Deletes at most 16 events older than `retention_days` (null: kept forever), oldest first, among
-- the 16 lowest ids: ids follow insertion, so the expired ones are there, and the read is bounded
-- however long the trail. Rows another transaction is deleting are skipped, never waited on.
create function public.expire_secret_events(retention_days integer) returns void
  language sql security definer set search_path = pg_catalog, pg_temp
  as $$
    delete from public.secret_events e
     where e.id in (
       select o.id from public.secret_events o
        where o.id = any(array(select h.id from public.secret_events h order by h.id limit 16))
          and o.occurred_at < now() - make_interval(days => expire_secret_events.retention_days)
        for update skip locked);
  $$;

drop function public.reveal_user_secrets(uuid, uuid, text[], text, integer, integer, integer);

-- As before (20261126100500_vault.sql), with two additions marked "issue 40": each 'revealed' row
-- carries the reveal event's id, and a recorded reveal expires old events (at most 16; none when
-- `retention_days` is null, kept forever).
create function public.reveal_user_secrets(
  session_id uuid, user_id uuid, secret_types text[], token_bucket text, creator_limit integer,
  token_limit integer, window_seconds integer, retention_days integer default null
)
  returns table (
    outcome text, secret_type text, ciphertext bytea, iv bytea, key_id text, updated_at timestamptz,
    retry_after integer, event_id bigint
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
       and public.auth_session_is_live(s.revoked_at, s.expires_at);
    if not found then
      return query select 'session_revoked'::text, null::text, null::bytea, null::bytea, null::text,
        null::timestamptz, null::integer, null::bigint;
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
          null::timestamptz, null::integer, null::bigint;
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
            returning id -- issue 40
          )
          select 'revealed'::text, r.secret_type, r.ciphertext, r.iv, r.key_id, r.updated_at,
                 null::integer, (select a.id from audited a) -- issue 40
            from revealed r order by r.position;
        -- issue 40: the trail's growth pays for its own expiry, a few rows at a time.
        if reveal_user_secrets.retention_days is not null then
          perform public.expire_secret_events(reveal_user_secrets.retention_days);
        end if;
        return;
      end if;
    end if;
    return query select 'rate_limited'::text, null::text, null::bytea, null::bytea, null::text,
      null::timestamptz, greatest(1, attempt.retry_after), null::bigint;
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
             event_id = case when l.event_id = record_reveal_failure.reveal_event_id
               then l.previous_event_id else l.event_id end,
             previous_revealed_at = null, previous_event_id = null
        from recorded r
       where l.user_id = r.user_id
         and record_reveal_failure.reveal_event_id in (l.event_id, l.previous_event_id)
    )
    select count(*)::integer from recorded
  $$;

-- The service's alone: Supabase grants new functions to the API roles by default.
revoke all on function public.expire_secret_events(integer) from public, anon, authenticated;
revoke all on function public.reveal_user_secrets(uuid, uuid, text[], text, integer, integer,
  integer, integer) from public, anon, authenticated;
revoke all on function public.record_reveal_failure(uuid, uuid, text[], bigint)
  from public, anon, authenticated;
grant execute on function public.reveal_user_secrets(uuid, uuid, text[], text, integer, integer,
  integer, integer) to service_role;
grant execute on function public.record_reveal_failure(uuid, uuid, text[], bigint)
  to service_role;
