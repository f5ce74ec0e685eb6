-- Creator controls: when a key was last used and what happened to it, which sessions are live, a
-- kill switch for live-run access, and leaving. The sensitive acts (unlocking, signing sessions
-- out, deleting the account) need a fresh wallet signature: a nonce issued for that purpose to the
-- signed-in creator's session and spent once, in the same transaction as the act.

-- 1. Sessions say where they came from and when they were last refreshed.
alter table public.auth_sessions
  add column client_description text
    check (client_description is null
      or (char_length(client_description) between 1 and 160 and client_description ~ '^[ -~]+$')),
  add column refreshed_at timestamptz;

-- A refresh spends its token (used_at set once); the session notes when. A trigger, so the refresh
-- statement stays as it is: one row update more, on refreshes only (the WHEN clause keeps every
-- other update of a token from calling it).
create function public.note_session_refresh() returns trigger
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  begin
    update public.auth_sessions s set refreshed_at = new.used_at where s.id = new.session_id;
    return null;
  end
  $$;
create trigger auth_refresh_tokens_note_refresh
  after update of used_at on public.auth_refresh_tokens
  for each row when (old.used_at is null and new.used_at is not null)
  execute function public.note_session_refresh();

-- A creator reads its own live sessions (never another's) while its own session is live, and of
-- them only what the sessions list shows: not revoked_reason.
create policy auth_sessions_owner_read on public.auth_sessions
  for select to authenticated
  using (user_id = (select auth.uid()) and (select public.session_is_live()));
grant select (id, user_id, created_at, expires_at, revoked_at, refreshed_at, client_description)
  on public.auth_sessions to authenticated;

-- 2. Nonces for a purpose. A sign-in nonce has none (null); one issued to confirm an act names
-- the act and the session that asked, and is bound to the creator's address and chain. Sign-in
-- never spends one, and an act spends only one issued for it, to that session.
alter table public.auth_nonces
  add column purpose text check (purpose in ('unlock', 'sign_out_sessions', 'delete_account')),
  add column session_id uuid;

-- 3. The kill switch: while set, every reveal of the creator's keys is refused.
alter table public.wallet_users add column reveals_locked_at timestamptz;

-- 4. The audit trail outlives the account: deleting a creator no longer deletes its events (they
-- keep the creator's former id, which no wallet maps to any more). It now tells a first save
-- ('put') from a replacement ('replace'), records locks and unlocks, and says why a reveal was
-- refused when it was not for its server token ('vault_locked').
alter table public.secret_events drop constraint secret_events_user_id_fkey;
alter table public.secret_events
  add column reason text,
  add constraint secret_events_reason_check
    check (reason is null or (action = 'reveal_refused' and reason = 'vault_locked')),
  drop constraint secret_events_action_check,
  add constraint secret_events_action_check
    check (action in ('put', 'replace', 'delete', 'reveal', 'reveal_failed', 'reveal_refused',
      'rotate', 'lock', 'unlock')),
  drop constraint secret_events_secret_types_check,
  add constraint secret_events_secret_types_check
    check (case when cardinality(secret_types) = 0
      then action in ('reveal_refused', 'lock', 'unlock')
      else array_ndims(secret_types) = 1 and array_position(secret_types, null) is null end);

-- As in 20261125060000, with a replacement told from a first save. A rotation keeps updated_at.
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
        case
          when tg_op = 'INSERT' then 'put'
          when new.updated_at = old.updated_at then 'rotate'
          else 'replace'
        end
      );
    return new;
  end
  $$;

-- 5. Sign-in as in 20261125000000 and 20261124010000, plus: a nonce issued for a purpose is
-- refused ('nonce_purpose'), and the session keeps the client's description of itself. The new
-- parameter comes last with a default, so a call in the old form keeps its meaning.
drop function public.sign_in_from_ip(text, integer, text, text, bytea, integer, integer, integer,
  bigint, bigint);
drop function public.sign_in_with_nonce(text, text, bytea, integer, integer, integer, bigint,
  bigint);

create function public.sign_in_with_nonce(
  nonce text,
  wallet_address text,
  refresh_token_hash bytea,
  session_seconds integer,
  address_limit integer,
  window_seconds integer,
  message_chain_id bigint default null,
  identity_chain_id bigint default null,
  client_description text default null
)
  returns table (outcome text, session_id uuid, user_id uuid, retry_after integer)
  language plpgsql set search_path = public, pg_temp
  as $$
  declare
    attempt record;
    signed_in uuid;
    new_session uuid;
  begin
    select * into attempt
      from public.hit_rate_limit('proof:address:' || sign_in_with_nonce.wallet_address, window_seconds);
    if attempt.hits > address_limit then
      return query select 'rate_limited', null::uuid, null::uuid, greatest(1, attempt.retry_after);
      return;
    end if;

    update public.auth_nonces n set used_at = now()
      where n.nonce = sign_in_with_nonce.nonce and n.used_at is null and n.expires_at > now()
        and n.purpose is null
        and (n.address is null or n.address = sign_in_with_nonce.wallet_address)
        and (n.chain_id is null or n.chain_id = sign_in_with_nonce.message_chain_id);
    if not found then
      return query select
        coalesce(
          public.nonce_refusal(sign_in_with_nonce.nonce, sign_in_with_nonce.wallet_address,
            sign_in_with_nonce.message_chain_id),
          (select 'nonce_purpose' from public.auth_nonces n
            where n.nonce = sign_in_with_nonce.nonce and n.purpose is not null),
          'nonce_used' -- spent by a concurrent proof between the update and this look
        ),
        null::uuid, null::uuid, null::integer;
      return;
    end if;

    insert into public.wallet_users as u (wallet_address, chain_id)
      values (sign_in_with_nonce.wallet_address, sign_in_with_nonce.identity_chain_id)
    on conflict on constraint wallet_users_identity_key do update set last_sign_in_at = now()
    returning u.id into signed_in;

    update public.auth_nonces n set used_by = signed_in where n.nonce = sign_in_with_nonce.nonce;

    insert into public.auth_sessions as s (user_id, expires_at, client_description)
      values (signed_in, now() + make_interval(secs => session_seconds),
        sign_in_with_nonce.client_description)
    returning s.id into new_session;
    insert into public.auth_refresh_tokens (token_hash, session_id)
      values (refresh_token_hash, new_session);

    return query select 'signed_in', new_session, signed_in, null::integer;
  end
  $$;

create function public.sign_in_from_ip(
  ip_bucket text,
  ip_limit integer,
  nonce text,
  wallet_address text,
  refresh_token_hash bytea,
  session_seconds integer,
  address_limit integer,
  window_seconds integer,
  message_chain_id bigint default null,
  identity_chain_id bigint default null,
  client_description text default null
)
  returns table (outcome text, session_id uuid, user_id uuid, retry_after integer)
  language plpgsql set search_path = public, pg_temp
  as $$
  declare
    attempt record;
  begin
    -- Over the client's budget: nothing else is counted, nothing consumed. A null bucket: the
    -- caller has counted this attempt already (a contract wallet's, before its RPC call).
    if ip_bucket is not null then
      select * into attempt from public.hit_rate_limit(ip_bucket, window_seconds);
      if attempt.hits > ip_limit then
        return query select 'rate_limited', null::uuid, null::uuid, greatest(1, attempt.retry_after);
        return;
      end if;
    end if;
    -- A nonce already spent, expired, bound elsewhere or issued for a purpose: refused without
    -- touching the wallet's count.
    perform 1 from public.auth_nonces n
      where n.nonce = sign_in_from_ip.nonce and n.used_at is null and n.expires_at > now()
        and n.purpose is null
        and (n.address is null or n.address = sign_in_from_ip.wallet_address)
        and (n.chain_id is null or n.chain_id = sign_in_from_ip.message_chain_id);
    if not found then
      return query select coalesce(
          public.nonce_refusal(sign_in_from_ip.nonce, sign_in_from_ip.wallet_address,
            sign_in_from_ip.message_chain_id),
          (select 'nonce_purpose' from public.auth_nonces n
            where n.nonce = sign_in_from_ip.nonce and n.purpose is not null),
          'nonce_used'),
        null::uuid, null::uuid, null::integer;
      return;
    end if;
    return query select * from public.sign_in_with_nonce(nonce, wallet_address,
      refresh_token_hash, session_seconds, address_limit, window_seconds, message_chain_id,
      identity_chain_id, client_description);
  end
  $$;

-- 6. The masked list as in 20261125050000, plus each secret's last use: when a live run last
-- revealed it since it was saved (a replacement starts again from never), read from the 'reveal'
-- events the reveal already writes. Searching the trail back for a type no recent reveal named
-- would cost as much as the trail is long (a key stored and never used: every reveal since its
-- save). A reveal names its types in the order every list uses, so a creator's reveals name few
-- distinct type lists (at most 2^7); this index lets the read step through those lists (a skip
-- scan: one index descent each) and take each list's latest reveal (one more), whatever the
-- trail's length. It is the one write this adds to a reveal: one index entry.
create index secret_events_reveal_sets_idx
  on public.secret_events (user_id, secret_types, occurred_at) where action = 'reveal';

drop function public.list_user_secrets(text, uuid, uuid, text[]);
create function public.list_user_secrets(
  claims text,
  session_id uuid,
  user_id uuid,
  secret_types text[]
)
  returns table (
    live boolean,
    secret_type text,
    updated_at timestamptz,
    hint text,
    last_used_at timestamptz
  )
  language plpgsql set search_path = pg_catalog, pg_temp
  as $$
  #variable_conflict use_column
  declare
    caller text := current_user;
  begin
    perform set_config('request.jwt.claims', list_user_secrets.claims, true);
    perform set_config('role', 'authenticated', true);
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

-- 7. Reveal as in 20261125060000, with the kill switch folded into its session check (one read of
-- the session and its creator, no extra round trip). A locked creator's reveal, within the
-- creator's own limit, is refused ('vault_locked') and recorded as a refused reveal naming the
-- types asked for; it spends none of the server token's budget. Past the limit: rate_limited, not
-- recorded, so a live run hammering a locked vault grows the trail no faster than reveals would.
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
    -- The creator's own limit first: a creator past it does not spend the token's budget.
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
-- as a vault write. Outcomes: 'locked' with when (the first lock's time when already locked),
-- 'session_revoked', 'rate_limited'. A lock that changes something is a 'lock' event.
create function public.lock_reveals(
  session_id uuid,
  user_id uuid,
  write_limit integer,
  window_seconds integer
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
      'vault:write:' || lock_reveals.user_id, lock_reveals.window_seconds);
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

-- The creator behind a live session: its wallet, chain (null for a key), since when, and whether
-- live-run access is locked. One row; live = false and nothing else when the session has ended.
create function public.creator_account(session_id uuid, user_id uuid)
  returns table (
    live boolean,
    wallet_address text,
    chain_id bigint,
    created_at timestamptz,
    reveals_locked_at timestamptz
  )
  language sql stable security definer set search_path = pg_catalog, pg_temp
  as $$
    select u.id is not null, u.wallet_address, u.chain_id, u.created_at, u.reveals_locked_at
      from (select 1) as one
      left join (public.auth_sessions s join public.wallet_users u on u.id = s.user_id)
        on s.id = creator_account.session_id and s.user_id = creator_account.user_id
       and s.revoked_at is null and s.expires_at > now()
  $$;

-- The creator's live sessions, newest first, read as the creator under row-level security (the
-- policy above): no row means the caller's own session has ended, since a live one lists itself.
-- Security invoker, as list_user_secrets, which says why; the role lasts to the transaction's end.
create function public.list_creator_sessions(claims text, user_id uuid)
  returns table (
    id uuid,
    created_at timestamptz,
    refreshed_at timestamptz,
    expires_at timestamptz,
    client_description text
  )
  language plpgsql set search_path = pg_catalog, pg_temp
  as $$
  #variable_conflict use_column
  begin
    perform set_config('request.jwt.claims', list_creator_sessions.claims, true);
    perform set_config('role', 'authenticated', true);
    return query
      select s.id, s.created_at, s.refreshed_at, s.expires_at, s.client_description
        from public.auth_sessions s
       where s.user_id = list_creator_sessions.user_id
         and s.revoked_at is null and s.expires_at > now()
       order by s.created_at desc, s.id;
  end
  $$;

-- A page of the creator's audit trail, newest first, read as the creator under row-level security,
-- after the event `before_id` (the previous page's last; null for the first page). An event id
-- that is not the creator's reads nothing. No row: the session is checked, as list_user_secrets
-- does, to tell an ended session (one row, live = false) from the end of the trail (no row).
create function public.list_secret_events(
  claims text,
  session_id uuid,
  user_id uuid,
  before_id bigint,
  page_size integer
)
  returns table (
    live boolean,
    id bigint,
    occurred_at timestamptz,
    action text,
    secret_types text[],
    reason text
  )
  language plpgsql set search_path = pg_catalog, pg_temp
  as $$
  #variable_conflict use_column
  declare
    caller text := current_user;
  begin
    perform set_config('request.jwt.claims', list_secret_events.claims, true);
    perform set_config('role', 'authenticated', true);
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

-- 8. A fresh signature. A live session asks for a nonce for one purpose; it is bound to the
-- creator's address and to its chain (a contract wallet's own; for a key, `key_chain_id`, the
-- chain the message will name). Counted against the client's nonce budget, as sign-in's nonces.
-- Outcomes: 'issued' (with the address and chain the message must name), 'session_revoked',
-- 'rate_limited'.
create function public.issue_confirmation_nonce(
  session_id uuid,
  user_id uuid,
  purpose text,
  nonce text,
  ttl_seconds integer,
  key_chain_id bigint,
  ip_bucket text,
  ip_limit integer,
  window_seconds integer
)
  returns table (
    outcome text,
    wallet_address text,
    chain_id bigint,
    issued_at timestamptz,
    expires_at timestamptz,
    retry_after integer
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
       and s.revoked_at is null and s.expires_at > now();
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

-- Spends a confirmation nonce for `purpose`, in the caller's transaction (the act's): the session
-- must be live, the signer must be its creator (a key: identity_chain_id null; a contract wallet:
-- its chain), and the nonce one issued here for that purpose to that session, unspent, unexpired,
-- for this address and the message's chain. A nonce refused for its state is refused before the
-- creator's count (a replayed signature spends no budget), as sign-in does. Null when spent; else
-- the refusal: 'session_revoked', 'identity_mismatch', a nonce_refusal() outcome, 'nonce_purpose'
-- (a sign-in nonce, or one for another act), 'nonce_session' (issued to another session),
-- 'rate_limited' (with retry_after).
create function public.spend_confirmation(
  session_id uuid,
  user_id uuid,
  purpose text,
  nonce text,
  wallet_address text,
  message_chain_id bigint,
  identity_chain_id bigint,
  creator_limit integer,
  window_seconds integer
)
  returns table (refusal text, retry_after integer)
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  declare
    refused text;
    attempt record;
  begin
    if not public.session_is_live_for(spend_confirmation.session_id, spend_confirmation.user_id)
    then
      return query select 'session_revoked'::text, null::integer;
      return;
    end if;
    perform 1 from public.wallet_users u
      where u.id = spend_confirmation.user_id
        and u.wallet_address = spend_confirmation.wallet_address
        and u.chain_id is not distinct from spend_confirmation.identity_chain_id;
    if not found then
      return query select 'identity_mismatch'::text, null::integer;
      return;
    end if;
    refused := public.nonce_refusal(spend_confirmation.nonce, spend_confirmation.wallet_address,
      spend_confirmation.message_chain_id);
    if refused is null then
      select case
          when n.purpose is distinct from spend_confirmation.purpose then 'nonce_purpose'
          when n.session_id is distinct from spend_confirmation.session_id then 'nonce_session'
        end
        into refused
        from public.auth_nonces n where n.nonce = spend_confirmation.nonce;
    end if;
    if refused is not null then
      return query select refused, null::integer;
      return;
    end if;
    select * into attempt from public.hit_rate_limit(
      'confirm:user:' || spend_confirmation.user_id, spend_confirmation.window_seconds);
    if attempt.hits > spend_confirmation.creator_limit then
      return query select 'rate_limited'::text, greatest(1, attempt.retry_after);
      return;
    end if;
    update public.auth_nonces n set used_at = now(), used_by = spend_confirmation.user_id
     where n.nonce = spend_confirmation.nonce and n.used_at is null and n.expires_at > now()
       and n.purpose = spend_confirmation.purpose and n.session_id = spend_confirmation.session_id
       and n.address = spend_confirmation.wallet_address
       and n.chain_id = spend_confirmation.message_chain_id;
    if not found then
      return query select 'nonce_used'::text, null::integer; -- spent by a concurrent request
      return;
    end if;
    return query select null::text, null::integer;
  end
  $$;

-- Unlocks live-run access with a fresh signature (purpose 'unlock'). Outcomes: 'unlocked' (also
-- when it was not locked), or spend_confirmation's refusal. An unlock that changes something is an
-- 'unlock' event.
create function public.unlock_reveals(
  session_id uuid,
  user_id uuid,
  nonce text,
  wallet_address text,
  message_chain_id bigint,
  identity_chain_id bigint,
  creator_limit integer,
  window_seconds integer
)
  returns table (outcome text, retry_after integer)
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  declare
    spent record;
  begin
    select * into spent from public.spend_confirmation(unlock_reveals.session_id,
      unlock_reveals.user_id, 'unlock', unlock_reveals.nonce, unlock_reveals.wallet_address,
      unlock_reveals.message_chain_id, unlock_reveals.identity_chain_id,
      unlock_reveals.creator_limit, unlock_reveals.window_seconds);
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

-- Signs sessions out with a fresh signature (purpose 'sign_out_sessions'). Every id must name a
-- session of this creator (live or ended), else 'session_not_found' and nothing is spent or ended:
-- another creator's session is out of reach, and unknown ids are not told apart from it. Outcomes:
-- 'signed_out' with how many live sessions ended, or spend_confirmation's refusal.
create function public.sign_out_sessions(
  session_id uuid,
  user_id uuid,
  nonce text,
  wallet_address text,
  message_chain_id bigint,
  identity_chain_id bigint,
  targets uuid[],
  creator_limit integer,
  window_seconds integer
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
    select * into spent from public.spend_confirmation(sign_out_sessions.session_id,
      sign_out_sessions.user_id, 'sign_out_sessions', sign_out_sessions.nonce,
      sign_out_sessions.wallet_address, sign_out_sessions.message_chain_id,
      sign_out_sessions.identity_chain_id, sign_out_sessions.creator_limit,
      sign_out_sessions.window_seconds);
    if spent.refusal is not null then
      return query select spent.refusal, null::integer, spent.retry_after;
      return;
    end if;
    update public.auth_sessions s set revoked_at = now(), revoked_reason = 'logout'
     where s.id = any(sign_out_sessions.targets) and s.user_id = sign_out_sessions.user_id
       and s.revoked_at is null and s.expires_at > now();
    get diagnostics ended = row_count;
    return query select 'signed_out'::text, ended, null::integer;
  end
  $$;

-- Deletes the account with a fresh signature (purpose 'delete_account'): the wallet mapping, and
-- with it (by cascade) the creator's sessions, refresh tokens and stored secrets (each deletion a
-- 'delete' event, as any); the rate-limit windows that name the creator or its wallet. Kept,
-- unlinked: nonce-use records (used_by by its foreign key, the address and session here) and the
-- audit trail (its events keep the former id, which nothing maps to a wallet any more). A later
-- sign-in with the same wallet is a new creator. Outcomes: 'deleted', or spend_confirmation's
-- refusal.
create function public.delete_account(
  session_id uuid,
  user_id uuid,
  nonce text,
  wallet_address text,
  message_chain_id bigint,
  identity_chain_id bigint,
  creator_limit integer,
  window_seconds integer
)
  returns table (outcome text, retry_after integer)
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  declare
    spent record;
  begin
    select * into spent from public.spend_confirmation(delete_account.session_id,
      delete_account.user_id, 'delete_account', delete_account.nonce,
      delete_account.wallet_address, delete_account.message_chain_id,
      delete_account.identity_chain_id, delete_account.creator_limit,
      delete_account.window_seconds);
    if spent.refusal is not null then
      return query select spent.refusal, spent.retry_after;
      return;
    end if;
    update public.auth_nonces n set address = null, session_id = null
     where n.used_by = delete_account.user_id
        or n.session_id in (select s.id from public.auth_sessions s
                             where s.user_id = delete_account.user_id);
    delete from public.rate_limit_windows w
     where strpos(w.bucket, delete_account.user_id::text) > 0
        or strpos(w.bucket, delete_account.wallet_address) > 0;
    delete from public.wallet_users u where u.id = delete_account.user_id;
    return query select 'deleted'::text, null::integer;
  end
  $$;

-- The service's alone: Supabase grants new functions to the API roles by default.
revoke all on function public.note_session_refresh() from public, anon, authenticated;
revoke all on function public.sign_in_with_nonce(text, text, bytea, integer, integer, integer,
  bigint, bigint, text) from public, anon, authenticated;
revoke all on function public.sign_in_from_ip(text, integer, text, text, bytea, integer, integer,
  integer, bigint, bigint, text) from public, anon, authenticated;
revoke all on function public.list_user_secrets(text, uuid, uuid, text[])
  from public, anon, authenticated;
revoke all on function public.lock_reveals(uuid, uuid, integer, integer)
  from public, anon, authenticated;
revoke all on function public.creator_account(uuid, uuid) from public, anon, authenticated;
revoke all on function public.list_creator_sessions(text, uuid) from public, anon, authenticated;
revoke all on function public.list_secret_events(text, uuid, uuid, bigint, integer)
  from public, anon, authenticated;
revoke all on function public.issue_confirmation_nonce(uuid, uuid, text, text, integer, bigint,
  text, integer, integer) from public, anon, authenticated;
revoke all on function public.spend_confirmation(uuid, uuid, text, text, text, bigint, bigint,
  integer, integer) from public, anon, authenticated;
revoke all on function public.unlock_reveals(uuid, uuid, text, text, bigint, bigint, integer,
  integer) from public, anon, authenticated;
revoke all on function public.sign_out_sessions(uuid, uuid, text, text, bigint, bigint, uuid[],
  integer, integer) from public, anon, authenticated;
revoke all on function public.delete_account(uuid, uuid, text, text, bigint, bigint, integer,
  integer) from public, anon, authenticated;

grant execute on function public.sign_in_with_nonce(text, text, bytea, integer, integer, integer,
  bigint, bigint, text) to service_role;
grant execute on function public.sign_in_from_ip(text, integer, text, text, bytea, integer,
  integer, integer, bigint, bigint, text) to service_role;
grant execute on function public.list_user_secrets(text, uuid, uuid, text[]) to service_role;
grant execute on function public.lock_reveals(uuid, uuid, integer, integer) to service_role;
grant execute on function public.creator_account(uuid, uuid) to service_role;
grant execute on function public.list_creator_sessions(text, uuid) to service_role;
grant execute on function public.list_secret_events(text, uuid, uuid, bigint, integer)
  to service_role;
grant execute on function public.issue_confirmation_nonce(uuid, uuid, text, text, integer, bigint,
  text, integer, integer) to service_role;
grant execute on function public.spend_confirmation(uuid, uuid, text, text, text, bigint, bigint,
  integer, integer) to service_role;
grant execute on function public.unlock_reveals(uuid, uuid, text, text, bigint, bigint, integer,
  integer) to service_role;
grant execute on function public.sign_out_sessions(uuid, uuid, text, text, bigint, bigint, uuid[],
  integer, integer) to service_role;
grant execute on function public.delete_account(uuid, uuid, text, text, bigint, bigint, integer,
  integer) to service_role;
