-- A contract wallet's sign-in can no longer be starved by one stranger. Anyone may name any wallet
-- and a failed check spends no nonce, so one client reusing one nonce could spend the whole
-- per-address RPC budget every minute and keep the owner's valid proof at 429. Now:
-- - each client IP has a budget per wallet of its own (address_client_limit), under a larger cap
--   for the wallet on that chain, every client together (address_limit), so one client uses at
--   most its share and many are needed to hold the wallet off;
-- - a nonce is put to the chain at most nonce_check_limit times, then refused ('nonce_exhausted').
-- The address buckets name the chain too: the same address elsewhere is another wallet, with a
-- budget of its own.
alter table public.auth_nonces
  add column contract_checks integer not null default 0 check (contract_checks >= 0);

drop function public.admit_contract_check(text, text, bigint, text, integer, integer, integer);
-- The two new limits come last and default to null (no such limit), so a caller of the old
-- seven-parameter form keeps its old meaning: the client's budget, then the wallet's.
create function public.admit_contract_check(
  nonce text,
  wallet_address text,
  message_chain_id bigint,
  client_ip text,
  ip_limit integer,
  address_limit integer,
  window_seconds integer,
  address_client_limit integer default null,
  nonce_check_limit integer default null
)
  returns table (outcome text, retry_after integer)
  language plpgsql set search_path = public, pg_temp
  as $$
  declare
    refusal text;
    attempt record;
    wallet text := admit_contract_check.message_chain_id || ':' || admit_contract_check.wallet_address;
  begin
    refusal := public.nonce_refusal(nonce, wallet_address, message_chain_id);
    if refusal is null and nonce_check_limit is not null then
      perform 1 from public.auth_nonces n
        where n.nonce = admit_contract_check.nonce and n.contract_checks >= nonce_check_limit;
      if found then
        refusal := 'nonce_exhausted';
      end if;
    end if;
    if refusal is not null then
      return query select refusal, null::integer;
      return;
    end if;
    -- The client's budgets first, the narrowest last: a client over its own spends none of the
    -- wallet's, so its refused attempts never reach the budget every client shares.
    select * into attempt from public.hit_rate_limit('rpc:ip:' || client_ip, window_seconds);
    if attempt.hits > ip_limit then
      return query select 'rate_limited', greatest(1, attempt.retry_after);
      return;
    end if;
    if address_client_limit is not null then
      select * into attempt
        from public.hit_rate_limit('rpc:address-ip:' || wallet || ':' || client_ip, window_seconds);
      if attempt.hits > address_client_limit then
        return query select 'rate_limited', greatest(1, attempt.retry_after);
        return;
      end if;
    end if;
    select * into attempt from public.hit_rate_limit('rpc:address:' || wallet, window_seconds);
    if attempt.hits > address_limit then
      return query select 'rate_limited', greatest(1, attempt.retry_after);
      return;
    end if;
    -- Counted last, and only if still under the cap: concurrent checks cannot pass it together.
    if nonce_check_limit is not null then
      update public.auth_nonces n set contract_checks = n.contract_checks + 1
        where n.nonce = admit_contract_check.nonce and n.contract_checks < nonce_check_limit;
      if not found then
        return query select 'nonce_exhausted', null::integer;
        return;
      end if;
    end if;
    return query select 'ok', null::integer;
  end
  $$;

revoke all on function
  public.admit_contract_check(text, text, bigint, text, integer, integer, integer, integer, integer)
  from public, anon, authenticated;
grant execute on function
  public.admit_contract_check(text, text, bigint, text, integer, integer, integer, integer, integer)
  to service_role;
