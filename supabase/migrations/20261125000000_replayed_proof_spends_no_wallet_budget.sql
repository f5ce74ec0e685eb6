-- A proof whose nonce can no longer be spent is refused before the wallet is counted. The wallet's
-- count starts only once a signature is the wallet's own, so strangers cannot use up its budget
-- with unsigned attempts; but a replay of one of its earlier proofs is the wallet's own signature,
-- and ten replays a minute (nonce_used each time) locked the owner out of signing in. The nonce is
-- now looked at first; public.sign_in_with_nonce still spends it with its conditional update, so
-- two proofs racing for one nonce still get one session.
create or replace function public.sign_in_from_ip(
  ip_bucket text,
  ip_limit integer,
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
    -- A nonce already spent, expired or bound elsewhere: refused without touching the wallet's count.
    perform 1 from public.auth_nonces n
      where n.nonce = sign_in_from_ip.nonce and n.used_at is null and n.expires_at > now()
        and (n.address is null or n.address = sign_in_from_ip.wallet_address)
        and (n.chain_id is null or n.chain_id = sign_in_from_ip.message_chain_id);
    if not found then
      return query select coalesce(public.nonce_refusal(sign_in_from_ip.nonce,
          sign_in_from_ip.wallet_address, sign_in_from_ip.message_chain_id), 'nonce_used'),
        null::uuid, null::uuid, null::integer;
      return;
    end if;
    return query select * from public.sign_in_with_nonce(nonce, wallet_address,
      refresh_token_hash, session_seconds, address_limit, window_seconds, message_chain_id,
      identity_chain_id);
  end
  $$;
