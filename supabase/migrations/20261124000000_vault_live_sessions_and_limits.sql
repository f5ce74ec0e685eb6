-- The vault behind checked functions, row-level security that requires a live session, and
-- limits on the vault's writes and reveals.
--
-- Before this, the vault policies checked `user_id = auth.uid()` only, and the function wrote as
-- `authenticated`: any token its JWT secret signed (another Supabase service accepting it, a token
-- whose session was logged out or revoked) kept read, write and delete on its owner's rows until it
-- expired, and could store values the service never encrypted or audit arbitrary types through
-- record_secret_reveal. Now:
--   * reading a vault row or an audit event as `authenticated` needs the claims' session_id to name
--     an unrevoked, unexpired session of auth.uid() (public.session_is_live());
--   * `authenticated` writes nothing: the service's writes go through security definer functions
--     that only the service's own connection can execute, and each checks the session itself;
--   * each of those functions counts the request against its limits in the same transaction.
-- Everything names its schema, so nothing depends on the caller's search_path (on Supabase,
-- pgcrypto lives in `extensions`; nothing here needs it).

-- A failed decryption after a reveal was recorded is recorded as such.
alter table public.secret_events
  drop constraint secret_events_action_check,
  add constraint secret_events_action_check
    check (action in ('put', 'delete', 'reveal', 'reveal_failed', 'rotate'));

-- Whether `session_id` names an unrevoked, unexpired session of `user_id`: the one definition of a
-- live session, for the policies (session_is_live, below) and the vault's checked functions.
create function public.session_is_live_for(session_id uuid, user_id uuid) returns boolean
  language sql stable set search_path = pg_catalog, pg_temp
  as $$
    select exists (
      select 1 from public.auth_sessions s
       where s.id = session_is_live_for.session_id and s.user_id = session_is_live_for.user_id
         and s.revoked_at is null and s.expires_at > now()
    )
  $$;

-- Whether the caller's JWT claims name a live session of auth.uid(). Security definer because
-- `authenticated` cannot read auth_sessions; a malformed session_id is simply not live.
create function public.session_is_live() returns boolean
  language plpgsql stable security definer set search_path = pg_catalog, pg_temp
  as $$
  declare
    claimed text := nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'session_id';
  begin
    if claimed is null
      or claimed !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
      return false;
    end if;
    return public.session_is_live_for(claimed::uuid, auth.uid());
  end
  $$;

-- Row-level security: a creator reads its own rows, and only while its session is live. The
-- sub-selects make Postgres evaluate each function once per statement, not once per row.
drop policy user_secrets_owner on public.user_secrets;
create policy user_secrets_owner_read on public.user_secrets
  for select to authenticated
  using (user_id = (select auth.uid()) and (select public.session_is_live()));

drop policy secret_events_owner_read on public.secret_events;
create policy secret_events_owner_read on public.secret_events
  for select to authenticated
  using (user_id = (select auth.uid()) and (select public.session_is_live()));

-- `authenticated` keeps reading (above) and loses every write: a creator's token alone can no
-- longer store a value the service did not encrypt, nor audit a reveal that did not happen.
revoke insert, update, delete, truncate, references, trigger on public.user_secrets
  from authenticated;
revoke execute on function public.record_secret_reveal(text[]) from authenticated;
-- Supabase grants new sequences to the API roles by default; the audit trail's ids are no one's.
do $$
begin
  execute format('revoke all on sequence %s from public, anon, authenticated',
    pg_get_serial_sequence('public.secret_events', 'id'));
end
$$;

-- Stores one ciphertext the service made, for a live session's creator. Outcomes: 'stored' (with
-- updated_at and whether the row is new), 'session_revoked' (nothing counted or written),
-- 'rate_limited' (with retry_after; the hit is counted, nothing written).
create function public.put_user_secret(
  session_id uuid,
  user_id uuid,
  secret_type text,
  ciphertext bytea,
  iv bytea,
  key_id text,
  hint text,
  write_limit integer,
  window_seconds integer
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
    -- trigger tells a creator's put from a key rotation (which keeps updated_at).
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
  session_id uuid,
  user_id uuid,
  secret_type text,
  write_limit integer,
  window_seconds integer
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

-- A reveal's read and its audit record in one statement, so one snapshot: every row returned has
-- its 'reveal' event, written in the caller's transaction and committed before the caller can
-- decrypt or release anything. Rows come back in the order of `secret_types`. Counted per creator
-- and per server token (`token_bucket`, which names the token without being it); past either
-- limit: one row 'rate_limited' with retry_after, nothing read. An ended session: one row
-- 'session_revoked'. Otherwise one row 'revealed' per stored type asked for (none: nothing stored).
create function public.reveal_user_secrets(
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
            insert into public.secret_events (user_id, secret_type, action)
              select r.user_id, r.secret_type, 'reveal' from revealed r order by r.position
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

-- After a recorded reveal, the types whose decryption then failed (the answer released nothing).
-- The session must be the creator's, but need not be live any more: what happened is recorded.
create function public.record_reveal_failure(
  session_id uuid,
  user_id uuid,
  secret_types text[]
)
  returns integer
  language sql security definer set search_path = pg_catalog, pg_temp
  as $$
    with recorded as (
      insert into public.secret_events (user_id, secret_type, action)
        select s.user_id, t.secret_type, 'reveal_failed'
          from public.auth_sessions s,
               unnest(record_reveal_failure.secret_types) with ordinality as t (secret_type, n)
         where s.id = record_reveal_failure.session_id
           and s.user_id = record_reveal_failure.user_id
         order by t.n
      returning 1
    )
    select count(*)::integer from recorded
  $$;

-- session_is_live() runs inside `authenticated`'s policies, so it must be executable by it. The
-- vault's writes are the service's alone: Supabase grants new functions to the API roles by
-- default, so each is revoked explicitly.
revoke all on function public.session_is_live_for(uuid, uuid) from public, anon, authenticated;
grant execute on function public.session_is_live_for(uuid, uuid) to service_role;
revoke all on function public.session_is_live() from public, anon;
grant execute on function public.session_is_live() to authenticated, service_role;

revoke all on function public.put_user_secret(uuid, uuid, text, bytea, bytea, text, text, integer,
  integer) from public, anon, authenticated;
revoke all on function public.delete_user_secret(uuid, uuid, text, integer, integer)
  from public, anon, authenticated;
revoke all on function public.reveal_user_secrets(uuid, uuid, text[], text, integer, integer,
  integer) from public, anon, authenticated;
revoke all on function public.record_reveal_failure(uuid, uuid, text[])
  from public, anon, authenticated;
grant execute on function public.put_user_secret(uuid, uuid, text, bytea, bytea, text, text,
  integer, integer) to service_role;
grant execute on function public.delete_user_secret(uuid, uuid, text, integer, integer)
  to service_role;
grant execute on function public.reveal_user_secrets(uuid, uuid, text[], text, integer, integer,
  integer) to service_role;
grant execute on function public.record_reveal_failure(uuid, uuid, text[]) to service_role;
