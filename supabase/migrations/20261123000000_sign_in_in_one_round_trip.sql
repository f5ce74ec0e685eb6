-- Sign-in in one round trip. The wallet-proof exchange used to be four statements in a row (the
-- wallet's rate limit, the nonce-consuming insert chain, the nonce's used_by, and on failure a
-- lookup of why); each waited for the database. These functions do the same work, in the same
-- order and with the same guarantees, inside the database.

-- One hit on a fixed-window counter: the hits so far in this window, and the seconds until it ends.
create function public.hit_rate_limit(bucket text, window_seconds integer)
  returns table (hits integer, retry_after integer)
  language sql set search_path = public, pg_temp
  as $$
    insert into public.rate_limit_windows as w (bucket, window_start, hits)
      values (
        hit_rate_limit.bucket,
        to_timestamp(floor(extract(epoch from now()) / hit_rate_limit.window_seconds)
          * hit_rate_limit.window_seconds),
        1
      )
    on conflict on constraint rate_limit_windows_pkey do update set hits = w.hits + 1
    returning w.hits,
      ceil(extract(epoch from w.window_start) + hit_rate_limit.window_seconds
        - extract(epoch from now()))::integer
  $$;

-- Called once the signature is the wallet's own. In order: count the attempt against the wallet's
-- limit (over it: 'rate_limited', nothing consumed); consume the nonce with a conditional update, so
-- two concurrent proofs with one nonce get exactly one session ('nonce_unknown', 'nonce_used' or
-- 'nonce_expired' otherwise); create or reuse the wallet's user; record who used the nonce; store
-- the session and its first refresh token. One statement from the caller, so one transaction.
create function public.sign_in_with_nonce(
  nonce text,
  wallet_address text,
  refresh_token_hash bytea,
  session_seconds integer,
  address_limit integer,
  window_seconds integer
)
  returns table (outcome text, session_id uuid, user_id uuid, retry_after integer)
  language plpgsql set search_path = public, pg_temp
  as $$
  declare
    attempt record;
    nonce_row public.auth_nonces%rowtype;
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
      where n.nonce = sign_in_with_nonce.nonce and n.used_at is null and n.expires_at > now();
    if not found then
      select * into nonce_row from public.auth_nonces n where n.nonce = sign_in_with_nonce.nonce;
      return query select
        case
          when nonce_row.nonce is null then 'nonce_unknown'
          when nonce_row.used_at is not null then 'nonce_used'
          else 'nonce_expired'
        end,
        null::uuid, null::uuid, null::integer;
      return;
    end if;

    insert into public.wallet_users as u (wallet_address)
      values (sign_in_with_nonce.wallet_address)
    on conflict on constraint wallet_users_wallet_address_key do update set last_sign_in_at = now()
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

-- Only the service's own connection signs creators in; the API roles cannot call either.
revoke all on function public.hit_rate_limit(text, integer) from public, anon, authenticated;
revoke all on function public.sign_in_with_nonce(text, text, bytea, integer, integer, integer)
  from public, anon, authenticated;
grant execute on function public.hit_rate_limit(text, integer) to service_role;
grant execute on function public.sign_in_with_nonce(text, text, bytea, integer, integer, integer)
  to service_role;
