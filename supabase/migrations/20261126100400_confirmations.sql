-- Confirmations: the sensitive acts (unlocking live-run access, signing sessions out, deleting the
-- account) need a fresh wallet signature, not the session alone, so a stolen session cannot do
-- them. A live session asks for a nonce for one act; the act spends it once, in its own
-- transaction.

-- A live session asks for a nonce for one purpose; it is bound to the
-- creator's address and to its chain (a contract wallet's own; for a key, `key_chain_id`, the
-- chain the message will name). Counted against the client's nonce budget, as sign-in's nonces.
-- Outcomes: 'issued' (with the address and chain the message must name), 'session_revoked',
-- 'rate_limited'.
create function public.issue_confirmation_nonce(
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
  session_id uuid, user_id uuid, purpose text, nonce text, wallet_address text,
  message_chain_id bigint, identity_chain_id bigint, creator_limit integer, window_seconds integer
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

-- Signs sessions out with a fresh signature (purpose 'sign_out_sessions'). Every id must name a
-- session of this creator (live or ended), else 'session_not_found' and nothing is spent or ended:
-- another creator's session is out of reach, and unknown ids are not told apart from it. Outcomes:
-- 'signed_out' with how many live sessions ended, or spend_confirmation's refusal.
create function public.sign_out_sessions(
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
       and s.revoked_at is null and s.expires_at > now();
    get diagnostics ended = row_count;
    return query select 'signed_out'::text, ended, null::integer;
  end
  $$;

-- Deletes the account with a fresh signature (purpose 'delete_account'): the wallet mapping, and
-- with it (by cascade) the creator's sessions, refresh tokens and stored secrets (each deletion a
-- 'delete' event, as any); the rate-limit windows that name the creator (not its wallet's). Kept,
-- unlinked: nonce-use records (used_by by its foreign key, the address and session here) and the
-- audit trail (its events keep the former id, which nothing maps to a wallet any more). A later
-- sign-in with the same wallet is a new creator. Outcomes: 'deleted', or spend_confirmation's
-- refusal.
create function public.delete_account(
  session_id uuid, user_id uuid, nonce text, wallet_address text, message_chain_id bigint,
  identity_chain_id bigint, creator_limit integer, window_seconds integer
)
  returns table (outcome text, retry_after integer)
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  declare
    spent record;
  begin
    select * into spent from public.spend_confirmation(session_id, user_id, 'delete_account',
      nonce, wallet_address, message_chain_id, identity_chain_id, creator_limit, window_seconds);
    if spent.refusal is not null then
      return query select spent.refusal, spent.retry_after;
      return;
    end if;
    update public.auth_nonces n set address = null, session_id = null
     where n.used_by = delete_account.user_id
        or n.session_id in (select s.id from public.auth_sessions s
                             where s.user_id = delete_account.user_id);
    -- Only the creator's own windows: those naming the wallet are shared with every client that
    -- names it, and clearing them would let sign-in, delete, sign-in reset the wallet's caps.
    delete from public.rate_limit_windows w
     where strpos(w.bucket, delete_account.user_id::text) > 0;
    delete from public.wallet_users u where u.id = delete_account.user_id;
    return query select 'deleted'::text, null::integer;
  end
  $$;

-- The service's alone: Supabase grants new functions to the API roles by default.
revoke all on function public.issue_confirmation_nonce(uuid, uuid, text, text, integer, bigint,
  text, integer, integer) from public, anon, authenticated;
revoke all on function public.spend_confirmation(uuid, uuid, text, text, text, bigint, bigint,
  integer, integer) from public, anon, authenticated;
revoke all on function public.sign_out_sessions(uuid, uuid, text, text, bigint, bigint, uuid[],
  integer, integer) from public, anon, authenticated;
revoke all on function public.delete_account(uuid, uuid, text, text, bigint, bigint, integer,
  integer) from public, anon, authenticated;
grant execute on function public.issue_confirmation_nonce(uuid, uuid, text, text, integer, bigint,
  text, integer, integer) to service_role;
grant execute on function public.spend_confirmation(uuid, uuid, text, text, text, bigint, bigint,
  integer, integer) to service_role;
grant execute on function public.sign_out_sessions(uuid, uuid, text, text, bigint, bigint, uuid[],
  integer, integer) to service_role;
grant execute on function public.delete_account(uuid, uuid, text, text, bigint, bigint, integer,
  integer) to service_role;
