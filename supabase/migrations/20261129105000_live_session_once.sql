-- "The session is live" written once: public.auth_session_is_live(revoked_at, expires_at). Every
-- check that spelled it out is redefined through it, and the claims-reading check the policies call
-- is named for where it reads the session from (session_is_live_from_claims; session_is_live_for
-- takes it from arguments). Renaming keeps the policies: they refer to the function, not its name.

-- Not revoked and not expired. Plain SQL without a search_path setting, so Postgres inlines it into
-- the query that calls it (it names only its argument's columns and pg_catalog.now()).
-- It takes the two columns rather than the row: `authenticated` may read only some of a session's
-- columns, and a whole-row reference needs them all.
create function public.auth_session_is_live(revoked_at timestamptz, expires_at timestamptz)
  returns boolean
  language sql stable
  as $$ select revoked_at is null and expires_at > pg_catalog.now() $$;

alter function public.session_is_live() rename to session_is_live_from_claims;

create or replace function public.session_is_live_for(session_id uuid, user_id uuid)
  returns boolean
  language plpgsql stable security definer set search_path = pg_catalog, pg_temp
  as $$
  begin
    return exists (
      select 1 from public.auth_sessions s
       where s.id = session_is_live_for.session_id and s.user_id = session_is_live_for.user_id
         and public.auth_session_is_live(s.revoked_at, s.expires_at)
    );
  end
  $$;


create or replace function public.creator_account(session_id uuid, user_id uuid)
  returns table (
    live boolean, wallet_address text, chain_id bigint, created_at timestamptz,
    reveals_locked_at timestamptz
  )
  language sql stable security definer set search_path = pg_catalog, pg_temp
  as $$
    select u.id is not null, u.wallet_address, u.chain_id, u.created_at, u.reveals_locked_at
      from (select 1) as one
      left join (public.auth_sessions s join public.wallet_users u on u.id = s.user_id)
        on s.id = creator_account.session_id and s.user_id = creator_account.user_id
       and public.auth_session_is_live(s.revoked_at, s.expires_at)
  $$;


create or replace function public.list_creator_sessions(claims text, user_id uuid)
  returns table (
    id uuid, created_at timestamptz, refreshed_at timestamptz, expires_at timestamptz,
    client_description text
  )
  language plpgsql set search_path = pg_catalog, pg_temp
  as $$
  begin
    perform public.act_as_creator(list_creator_sessions.claims);
    return query
      select s.id, s.created_at, s.refreshed_at, s.expires_at, s.client_description
        from public.auth_sessions s
       where s.user_id = list_creator_sessions.user_id
         and public.auth_session_is_live(s.revoked_at, s.expires_at)
       order by s.created_at desc, s.id;
  end
  $$;


create or replace function public.issue_confirmation_nonce(
  session_id uuid, user_id uuid, purpose text, nonce text, ttl_seconds integer, key_chain_id bigint,
  ip_bucket text, ip_limit integer, window_seconds integer
)
  returns table (
    outcome text, wallet_address text, chain_id bigint, issued_at timestamptz,
    expires_at timestamptz, retry_after integer
  )
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  declare
    creator record;
    attempt record;
    stored record;
  begin
    select u.wallet_address, coalesce(u.chain_id, issue_confirmation_nonce.key_chain_id) as chain_id
      into creator
      from public.auth_sessions s join public.wallet_users u on u.id = s.user_id
     where s.id = issue_confirmation_nonce.session_id
       and s.user_id = issue_confirmation_nonce.user_id
       and public.auth_session_is_live(s.revoked_at, s.expires_at);
    if not found then
      return query select 'session_revoked'::text, null::text, null::bigint, null::timestamptz,
        null::timestamptz, null::integer;
      return;
    end if;
    select * into attempt from public.hit_rate_limit(issue_confirmation_nonce.ip_bucket,
      issue_confirmation_nonce.window_seconds);
    if attempt.hits > issue_confirmation_nonce.ip_limit then
      return query select 'rate_limited'::text, null::text, null::bigint, null::timestamptz,
        null::timestamptz, greatest(1, attempt.retry_after);
      return;
    end if;
    insert into public.auth_nonces as n (nonce, expires_at, address, chain_id, purpose, session_id)
      values (issue_confirmation_nonce.nonce,
        now() + make_interval(secs => issue_confirmation_nonce.ttl_seconds),
        creator.wallet_address, creator.chain_id, issue_confirmation_nonce.purpose,
        issue_confirmation_nonce.session_id)
    returning n.issued_at, n.expires_at into stored;
    return query select 'issued'::text, creator.wallet_address, creator.chain_id, stored.issued_at,
      stored.expires_at, null::integer;
  end
  $$;


create or replace function public.sign_out_sessions(
  session_id uuid, user_id uuid, nonce text, wallet_address text, message_chain_id bigint,
  identity_chain_id bigint, targets uuid[], creator_limit integer, window_seconds integer
)
  returns table (outcome text, signed_out integer, retry_after integer)
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  declare
    spent record;
    ended integer;
  begin
    if (select count(*) from public.auth_sessions s
          where s.id = any(sign_out_sessions.targets) and s.user_id = sign_out_sessions.user_id)
       <> (select count(distinct t) from unnest(sign_out_sessions.targets) as t) then
      return query select 'session_not_found'::text, null::integer, null::integer;
      return;
    end if;
    select * into spent from public.spend_confirmation(session_id, user_id, 'sign_out_sessions',
      nonce, wallet_address, message_chain_id, identity_chain_id, creator_limit, window_seconds);
    if spent.refusal is not null then
      return query select spent.refusal, null::integer, spent.retry_after;
      return;
    end if;
    update public.auth_sessions s set revoked_at = now(), revoked_reason = 'logout'
     where s.id = any(sign_out_sessions.targets) and s.user_id = sign_out_sessions.user_id
       and public.auth_session_is_live(s.revoked_at, s.expires_at);
    get diagnostics ended = row_count;
    return query select 'signed_out'::text, ended, null::integer;
  end
  $$;


-- `authenticated` runs it in list_creator_sessions, which reads as the creator (Postgres inlines a
-- function only for a role that may execute it); it tells nothing about a row its caller does not
-- already hold. Supabase grants new functions to anon by default, so that is revoked.
revoke all on function public.auth_session_is_live(timestamptz, timestamptz) from public, anon;
grant execute on function public.auth_session_is_live(timestamptz, timestamptz)
  to authenticated, service_role;
