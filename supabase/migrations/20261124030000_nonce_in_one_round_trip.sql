-- A nonce in one round trip: the client's rate-limit hit and the nonce's insert were two statements,
-- each its own transaction and WAL flush. One call now counts the hit and, when the client is
-- within its limit, stores the nonce, in one transaction.

create function public.issue_nonce(
  nonce text,
  ttl_seconds integer,
  bound_address text,
  bound_chain_id bigint,
  ip_bucket text,
  ip_limit integer,
  window_seconds integer
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
    -- Spent and expired nonces are swept now and then by whoever passes by: no scheduler needed.
    if random() < 0.01 then
      delete from public.auth_nonces n where n.expires_at < now() - interval '1 day';
    end if;
    return query select 'issued', stored.issued_at, stored.expires_at, null::integer;
  end
  $$;

revoke all on function public.issue_nonce(text, integer, text, bigint, text, integer, integer)
  from public, anon, authenticated;
grant execute on function public.issue_nonce(text, integer, text, bigint, text, integer, integer)
  to service_role;
