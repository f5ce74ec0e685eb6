-- The wallet's budget of proofs named by what the proof signed in as: a key ('eoa', one creator
-- on every chain) or a contract wallet on its chain. Named by the address alone, whoever controls
-- the same contract address on another chain (another wallet, other owners) could spend the
-- owner's budget with valid sign-ins of their own and keep the owner out.

-- Called once the signature is the wallet's own. In order: count the attempt against the wallet's
-- limit (over it: 'rate_limited', nothing consumed); spend the nonce with a conditional update, so
-- two concurrent proofs with one nonce get exactly one session (a nonce_refusal() outcome or
-- 'nonce_purpose' otherwise); create or reuse the creator, found by (address, identity_chain_id),
-- null for a key; record who used the nonce; store the session and its first refresh token.
create or replace function public.sign_in_with_nonce(
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
      from public.hit_rate_limit('proof:address:'
        || coalesce(sign_in_with_nonce.identity_chain_id::text, 'eoa') || ':'
        || sign_in_with_nonce.wallet_address, window_seconds);
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

-- The grants stand: `create or replace` keeps the function's privileges (the service's alone).
