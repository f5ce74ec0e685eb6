-- Sign-in with a wallet: nonces issued by the server and spent once, a contract wallet's admission
-- to its RPC check, and the sign-in itself. Each is one call from the service, so one transaction.

-- The nonce-use record: issued by the server, consumed once by a conditional update. A nonce
-- requested with an address or a chain id is spent only by a proof for them. A sign-in nonce has no
-- purpose; one issued to confirm an act names the act and the session that asked
-- (public.issue_confirmation_nonce), and sign-in never spends it.
create table public.auth_nonces (
  nonce text primary key check (nonce ~ '^[A-Za-z0-9]{16,64}$'),
  issued_at timestamptz not null default now(),
  expires_at timestamptz not null,
  used_at timestamptz,
  used_by uuid references public.wallet_users (id) on delete set null,
  address text check (address is null or address ~ '^0x[0-9a-f]{40}$'),
  chain_id bigint check (chain_id is null or chain_id > 0),
  -- How many times a contract wallet's proof for this nonce was put to the chain.
  contract_checks integer not null default 0 check (contract_checks >= 0),
  purpose text check (purpose in ('unlock', 'sign_out_sessions', 'delete_account')),
  session_id uuid
);
create index auth_nonces_expires_at_idx on public.auth_nonces (expires_at);

alter table public.auth_nonces enable row level security;
alter table public.auth_nonces force row level security;
revoke all on public.auth_nonces from public, anon, authenticated;
grant all on public.auth_nonces to service_role;

-- Why a nonce cannot be spent by a proof for (wallet_address, message_chain_id); null when it can.
create function public.nonce_refusal(nonce text, wallet_address text, message_chain_id bigint)
  returns text
  language sql stable set search_path = public, pg_temp
  as $$
    select case
      when n.nonce is null then 'nonce_unknown'
      when n.used_at is not null then 'nonce_used'
      when n.expires_at <= now() then 'nonce_expired'
      when n.address is not null and n.address <> nonce_refusal.wallet_address
        then 'nonce_mismatch'
      when n.chain_id is not null and n.chain_id is distinct from nonce_refusal.message_chain_id
        then 'nonce_mismatch'
    end
    from (select 1) as one
      left join public.auth_nonces n on n.nonce = nonce_refusal.nonce
  $$;

-- A sign-in nonce: counts the client's request and, within its limit, stores the nonce.
create function public.issue_nonce(
  nonce text, ttl_seconds integer, bound_address text, bound_chain_id bigint, ip_bucket text,
  ip_limit integer, window_seconds integer
)
  returns table (outcome text, issued_at timestamptz, expires_at timestamptz, retry_after integer)
  language plpgsql set search_path = public, pg_temp
  as $$
  declare
    attempt record;
    stored public.auth_nonces%rowtype;
  begin
    select * into attempt from public.hit_rate_limit(ip_bucket, window_seconds);
    if attempt.hits > ip_limit then
      return query select 'rate_limited', null::timestamptz, null::timestamptz,
        greatest(1, attempt.retry_after);
      return;
    end if;
    insert into public.auth_nonces as n (nonce, expires_at, address, chain_id)
      values (issue_nonce.nonce, now() + make_interval(secs => ttl_seconds), bound_address,
        bound_chain_id)
    returning n.* into stored;
    return query select 'issued', stored.issued_at, stored.expires_at, null::integer;
  end
  $$;

-- Before a contract wallet's signature costs an RPC call: the nonce checked (not spent), then the
-- call counted. Anyone may name any wallet and a failed check spends no nonce, so one client must
-- not be able to spend a wallet's whole budget: each client has a budget per wallet of its own
-- (address_client_limit) under a cap for the wallet on that chain, every client together
-- (address_limit), and a nonce is put to the chain at most nonce_check_limit times
-- ('nonce_exhausted'). The wallet's buckets name its chain: the same address elsewhere is another
-- wallet. 'ok', a nonce refusal, or 'rate_limited'.
create function public.admit_contract_check(
  nonce text, wallet_address text, message_chain_id bigint, client_ip text, ip_limit integer,
  address_limit integer, window_seconds integer, address_client_limit integer,
  nonce_check_limit integer
)
  returns table (outcome text, retry_after integer)
  language plpgsql set search_path = public, pg_temp
  as $$
  declare
    refusal text;
    budget record;
    attempt record;
    wallet text := admit_contract_check.message_chain_id || ':' || admit_contract_check.wallet_address;
  begin
    refusal := coalesce(public.nonce_refusal(nonce, wallet_address, message_chain_id),
      (select 'nonce_exhausted' from public.auth_nonces n
        where n.nonce = admit_contract_check.nonce and n.contract_checks >= nonce_check_limit));
    if refusal is not null then
      return query select refusal, null::integer;
      return;
    end if;
    -- The client's budgets first, the narrowest last: a client over its own spends none of the
    -- wallet's, so its refused attempts never reach the budget every client shares.
    for budget in
      select b.bucket, b.hit_limit
        from (values (1, 'rpc:ip:' || client_ip, ip_limit),
                     (2, 'rpc:address-ip:' || wallet || ':' || client_ip, address_client_limit),
                     (3, 'rpc:address:' || wallet, address_limit)) as b(step, bucket, hit_limit)
       order by b.step
    loop
      select * into attempt from public.hit_rate_limit(budget.bucket, window_seconds);
      if attempt.hits > budget.hit_limit then
        return query select 'rate_limited', greatest(1, attempt.retry_after);
        return;
      end if;
    end loop;
    -- Counted last, and only if still under the cap: concurrent checks cannot pass it together.
    update public.auth_nonces n set contract_checks = n.contract_checks + 1
      where n.nonce = admit_contract_check.nonce and n.contract_checks < nonce_check_limit;
    if not found then
      return query select 'nonce_exhausted', null::integer;
      return;
    end if;
    return query select 'ok', null::integer;
  end
  $$;

-- Called once the signature is the wallet's own. In order: count the attempt against the wallet's
-- limit (over it: 'rate_limited', nothing consumed); spend the nonce with a conditional update, so
-- two concurrent proofs with one nonce get exactly one session (a nonce_refusal() outcome or
-- 'nonce_purpose' otherwise); create or reuse the creator, found by (address, identity_chain_id),
-- null for a key; record who used the nonce; store the session and its first refresh token.
create function public.sign_in_with_nonce(
  nonce text, wallet_address text, refresh_token_hash bytea, session_seconds integer,
  address_limit integer, window_seconds integer, message_chain_id bigint default null,
  identity_chain_id bigint default null, client_description text default null
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

-- The sign-in as the service calls it: the client's attempt counted first, in the same
-- transaction, then public.sign_in_with_nonce. A nonce that can no longer be spent is refused
-- before the wallet is counted: a replay of the wallet's own earlier proof must not use up its
-- budget and lock its owner out.
create function public.sign_in_from_ip(
  ip_bucket text, ip_limit integer, nonce text, wallet_address text, refresh_token_hash bytea,
  session_seconds integer, address_limit integer, window_seconds integer,
  message_chain_id bigint default null, identity_chain_id bigint default null,
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

-- The service's alone: Supabase grants new functions to the API roles by default.
revoke all on function public.nonce_refusal(text, text, bigint) from public, anon, authenticated;
revoke all on function public.issue_nonce(text, integer, text, bigint, text, integer, integer)
  from public, anon, authenticated;
revoke all on function
  public.admit_contract_check(text, text, bigint, text, integer, integer, integer, integer, integer)
  from public, anon, authenticated;
revoke all on function public.sign_in_with_nonce(text, text, bytea, integer, integer, integer,
  bigint, bigint, text) from public, anon, authenticated;
revoke all on function public.sign_in_from_ip(text, integer, text, text, bytea, integer, integer,
  integer, bigint, bigint, text) from public, anon, authenticated;
grant execute on function public.nonce_refusal(text, text, bigint) to service_role;
grant execute on function public.issue_nonce(text, integer, text, bigint, text, integer, integer)
  to service_role;
grant execute on function
  public.admit_contract_check(text, text, bigint, text, integer, integer, integer, integer, integer)
  to service_role;
grant execute on function public.sign_in_with_nonce(text, text, bytea, integer, integer, integer,
  bigint, bigint, text) to service_role;
grant execute on function public.sign_in_from_ip(text, integer, text, text, bytea, integer,
  integer, integer, bigint, bigint, text) to service_role;
