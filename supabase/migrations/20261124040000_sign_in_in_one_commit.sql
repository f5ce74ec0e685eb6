-- A successful sign-in in one commit. The client-IP count of a proof used to be its own statement
-- (its own transaction and WAL flush) beside public.sign_in_with_nonce. Now a proof whose
-- signature checks out is counted inside the sign-in's own transaction; a proof that fails its
-- checks is still counted (public.hit_rate_limit, from the function), so every attempt counts
-- against the client's budget, as before.

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
    return query select * from public.sign_in_with_nonce(nonce, wallet_address,
      refresh_token_hash, session_seconds, address_limit, window_seconds, message_chain_id,
      identity_chain_id);
  end
  $$;

revoke all on function public.sign_in_from_ip(text, integer, text, text, bytea, integer, integer,
  integer, bigint, bigint) from public, anon, authenticated;
grant execute on function public.sign_in_from_ip(text, integer, text, text, bytea, integer, integer,
  integer, bigint, bigint) to service_role;
