-- Smart-contract wallets (ERC-1271, ERC-6492) sign in, and nonces can be bound to an address and
-- a chain.

-- A creator is a key (an externally owned account: the same on every chain, chain_id null) or a
-- contract wallet on one chain (chain_id set). A contract address means nothing off its chain: the
-- same address elsewhere may be someone else's wallet (another factory, another deployer with the
-- same nonce, a wallet not deployed there yet that anyone may deploy with other owners). So a
-- contract proven on a second chain is a creator of its own, never the first one; refusing it
-- instead would let whoever proves an address first lock its owner on every other chain out.
alter table public.wallet_users
  add column chain_id bigint check (chain_id is null or chain_id > 0);
alter table public.wallet_users drop constraint wallet_users_wallet_address_key;
alter table public.wallet_users
  add constraint wallet_users_identity_key unique nulls not distinct (wallet_address, chain_id);

-- A nonce requested with an address or a chain id is spent only by a proof for them.
alter table public.auth_nonces
  add column address text check (address is null or address ~ '^0x[0-9a-f]{40}$'),
  add column chain_id bigint check (chain_id is null or chain_id > 0);

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

-- Before a contract wallet's signature costs an RPC call: the nonce checked (not spent), then the
-- call counted against the client's and the address's budgets, in that order, so a client over its
-- own budget spends none of the address's. 'ok', a nonce refusal, or 'rate_limited'.
create function public.admit_contract_check(
  nonce text,
  wallet_address text,
  message_chain_id bigint,
  client_ip text,
  ip_limit integer,
  address_limit integer,
  window_seconds integer
)
  returns table (outcome text, retry_after integer)
  language plpgsql set search_path = public, pg_temp
  as $$
  declare
    refusal text;
    attempt record;
  begin
    refusal := public.nonce_refusal(nonce, wallet_address, message_chain_id);
    if refusal is not null then
      return query select refusal, null::integer;
      return;
    end if;
    select * into attempt from public.hit_rate_limit('rpc:ip:' || client_ip, window_seconds);
    if attempt.hits > ip_limit then
      return query select 'rate_limited', greatest(1, attempt.retry_after);
      return;
    end if;
    select * into attempt
      from public.hit_rate_limit('rpc:address:' || admit_contract_check.wallet_address, window_seconds);
    if attempt.hits > address_limit then
      return query select 'rate_limited', greatest(1, attempt.retry_after);
      return;
    end if;
    return query select 'ok', null::integer;
  end
  $$;

-- sign_in_with_nonce as before (20261123000000), plus: the nonce's binding checked as it is spent
-- ('nonce_mismatch'), and the creator found by (address, identity_chain_id), null for a key. The
-- two new parameters default to null, so a caller of the old six-parameter form keeps working and
-- can never spend a chain-bound nonce.
drop function public.sign_in_with_nonce(text, text, bytea, integer, integer, integer);
create function public.sign_in_with_nonce(
  nonce text,
  wallet_address text,
  refresh_token_hash bytea,
  session_seconds integer,
  address_limit integer,
  window_seconds integer,
  message_chain_id bigint default null,
  identity_chain_id bigint default null
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
        and (n.address is null or n.address = sign_in_with_nonce.wallet_address)
        and (n.chain_id is null or n.chain_id = sign_in_with_nonce.message_chain_id);
    if not found then
      return query select
        coalesce(
          public.nonce_refusal(sign_in_with_nonce.nonce, sign_in_with_nonce.wallet_address,
            sign_in_with_nonce.message_chain_id),
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

    insert into public.auth_sessions as s (user_id, expires_at)
      values (signed_in, now() + make_interval(secs => session_seconds))
    returning s.id into new_session;
    insert into public.auth_refresh_tokens (token_hash, session_id)
      values (refresh_token_hash, new_session);

    return query select 'signed_in', new_session, signed_in, null::integer;
  end
  $$;

-- Only the service's own connection signs creators in; the API roles cannot call any of these.
revoke all on function public.nonce_refusal(text, text, bigint) from public, anon, authenticated;
revoke all on function public.admit_contract_check(text, text, bigint, text, integer, integer, integer)
  from public, anon, authenticated;
revoke all on function public.sign_in_with_nonce(text, text, bytea, integer, integer, integer, bigint, bigint)
  from public, anon, authenticated;
grant execute on function public.nonce_refusal(text, text, bigint) to service_role;
grant execute on function public.admit_contract_check(text, text, bigint, text, integer, integer, integer)
  to service_role;
grant execute on function public.sign_in_with_nonce(text, text, bytea, integer, integer, integer, bigint, bigint)
  to service_role;
