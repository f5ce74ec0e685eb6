-- One audit event per reveal: the request, as an audit log records it, naming every type it read.
--
-- A reveal wrote one secret_events row per type it read, each with its own foreign-key check and
-- index entries: seven for a reveal of every stored type (the default when none are named), one or
-- two for a live run's credentialsForStep; reveals are the trail's most frequent event. Now an
-- event names its types in `secret_types`: every type a reveal read, or the types a failed reveal
-- could not decrypt (in the order of the request's types, which the service sends in the order
-- every list uses); the one type a put, delete or rotation touched. What the trail tells is
-- unchanged (who, which types, what, when; never a value), as is who may read it: the creator,
-- under the live-session policy.
--
-- The column is converted in place, one rewrite of the table under its exclusive lock: writes,
-- reveals and creators' reads of the trail wait for it. Events written before keep their one type.

alter table public.secret_events
  alter column secret_type type text[] using array[secret_type];
alter table public.secret_events rename column secret_type to secret_types;
alter table public.secret_events
  add constraint secret_events_secret_types_check
    check (array_ndims(secret_types) = 1 and cardinality(secret_types) >= 1
      and array_position(secret_types, null) is null);

-- Unused by the service (authenticated lost it in 20261124000000) and written for the old shape.
drop function public.record_secret_reveal(text[]);

-- As in 20261122000000, one event per written row, its type as a one-element array.
create or replace function public.audit_user_secret_change() returns trigger
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
        case when tg_op = 'UPDATE' and new.updated_at = old.updated_at then 'rotate' else 'put' end
      );
    return new;
  end
  $$;

-- As in 20261124000000, but the read's audit record is one event naming the types read (none read:
-- no event, as before).
create or replace function public.reveal_user_secrets(
  session_id uuid,
  user_id uuid,
  secret_types text[],
  token_bucket text,
  creator_limit integer,
  token_limit integer,
  window_seconds integer
)
  returns table (
    outcome text,
    secret_type text,
    ciphertext bytea,
    iv bytea,
    key_id text,
    updated_at timestamptz,
    retry_after integer
  )
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  #variable_conflict use_column
  declare
    attempt record;
  begin
    if not public.session_is_live_for(reveal_user_secrets.session_id, reveal_user_secrets.user_id) then
      return query select 'session_revoked'::text, null::text, null::bytea, null::bytea, null::text,
        null::timestamptz, null::integer;
      return;
    end if;
    -- The creator's own limit first: a creator past it does not spend the token's budget.
    select * into attempt from public.hit_rate_limit(
      'vault:reveal:user:' || reveal_user_secrets.user_id, reveal_user_secrets.window_seconds);
    if attempt.hits <= reveal_user_secrets.creator_limit then
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

-- As in 20261124000000: the types whose decryption failed after a recorded reveal, now as one
-- event. Returns the number of events written: 1, or 0 when the session is not the creator's or
-- no type is named.
create or replace function public.record_reveal_failure(
  session_id uuid,
  user_id uuid,
  secret_types text[]
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
