-- Rate-limit buckets handed in: every function that counts a budget is given its bucket's prefix
-- (and its limit, as before) instead of naming it, so each bucket is declared once, in
-- functions/_shared/config/limits.ts, which docs/operations.md's table of rate limits shows. Each
-- function appends the creator, wallet or client it acts on, exactly as it did: the buckets' names
-- are unchanged, so windows already counting carry over. Each body is its latest definition (named
-- above it) with the bucket's literal replaced by its parameter, nothing else changed; a new
-- parameter changes the signature, so each is dropped and created again, and its grants with it.
-- The reveal, introduced by this session's 20261129110100_reveal_retention.sql, takes its buckets
-- there.

drop function public.admit_contract_check(text, text, bigint, text, integer, integer, integer,
  integer, integer);
drop function public.sign_in_with_nonce(text, text, bytea, integer, integer, integer, bigint,
  bigint, text);
drop function public.sign_in_from_ip(text, integer, text, text, bytea, integer, integer, integer,
  bigint, bigint, text);
drop function public.spend_confirmation(uuid, uuid, text, text, text, bigint, bigint, integer,
  integer);
drop function public.sign_out_sessions(uuid, uuid, text, text, bigint, bigint, uuid[], integer,
  integer);
drop function public.delete_account(uuid, uuid, text, text, bigint, bigint, integer, integer);
drop function public.unlock_reveals(uuid, uuid, text, text, bigint, bigint, integer, integer);
drop function public.put_user_secret(uuid, uuid, text, bytea, bytea, text, text, integer, integer);
drop function public.delete_user_secret(uuid, uuid, text, integer, integer);
drop function public.lock_reveals(uuid, uuid, integer, integer);
drop function public.refuse_reveal(text, integer, integer, uuid, uuid);

-- As in 20261126100300_sign_in.sql, with its buckets handed in.
create function public.admit_contract_check(
  nonce text, wallet_address text, message_chain_id bigint, client_ip text, ip_bucket_prefix text,
  ip_limit integer, address_bucket_prefix text, address_limit integer, window_seconds integer,
  address_client_bucket_prefix text, address_client_limit integer, nonce_check_limit integer
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
        from (values (1, ip_bucket_prefix || client_ip, ip_limit),
                     (2, address_client_bucket_prefix || wallet || ':' || client_ip,
                      address_client_limit),
                     (3, address_bucket_prefix || wallet, address_limit))
               as b(step, bucket, hit_limit)
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

-- As in 20261129100000_proof_budget_by_chain.sql, with its buckets handed in.
create function public.sign_in_with_nonce(
  nonce text, wallet_address text, refresh_token_hash bytea, session_seconds integer,
  address_bucket_prefix text, address_limit integer, window_seconds integer,
  message_chain_id bigint default null, identity_chain_id bigint default null,
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
      from public.hit_rate_limit(sign_in_with_nonce.address_bucket_prefix
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

-- As in 20261126100300_sign_in.sql, with its buckets handed in.
create function public.sign_in_from_ip(
  ip_bucket text, ip_limit integer, nonce text, wallet_address text, refresh_token_hash bytea,
  session_seconds integer, address_bucket_prefix text, address_limit integer,
  window_seconds integer,
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
      refresh_token_hash, session_seconds, address_bucket_prefix, address_limit, window_seconds,
      message_chain_id,
      identity_chain_id, client_description);
  end
  $$;

-- As in 20261126100400_confirmations.sql, with its buckets handed in.
create function public.spend_confirmation(
  session_id uuid, user_id uuid, purpose text, nonce text, wallet_address text,
  message_chain_id bigint, identity_chain_id bigint, creator_bucket_prefix text,
  creator_limit integer, window_seconds integer
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
      spend_confirmation.creator_bucket_prefix || spend_confirmation.user_id,
        spend_confirmation.window_seconds);
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

-- As in 20261129105000_live_session_once.sql, with its buckets handed in.
create function public.sign_out_sessions(
  session_id uuid, user_id uuid, nonce text, wallet_address text, message_chain_id bigint,
  identity_chain_id bigint, targets uuid[], creator_bucket_prefix text, creator_limit integer,
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
    select * into spent from public.spend_confirmation(session_id, user_id, 'sign_out_sessions',
      nonce, wallet_address, message_chain_id, identity_chain_id, creator_bucket_prefix,
      creator_limit, window_seconds);
    if spent.refusal is not null then
      return query select spent.refusal, null::integer, spent.retry_after;
      return;
    end if;
    update public.auth_sessions s set revoked_at = now(), revoked_reason = 'logout'
     where s.id = any(sign_out_sessions.targets) and s.user_id = sign_out_sessions.user_id
       and public.auth_session_is_live(s.revoked_at, s.expires_at);
    get diagnostics ended = row_count;
    return query select 'signed_out'::text, ended, null::integer;
  end
  $$;

-- As in 20261126100400_confirmations.sql, with its buckets handed in.
create function public.delete_account(
  session_id uuid, user_id uuid, nonce text, wallet_address text, message_chain_id bigint,
  identity_chain_id bigint, creator_bucket_prefix text, creator_limit integer,
  window_seconds integer
)
  returns table (outcome text, retry_after integer)
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  declare
    spent record;
  begin
    select * into spent from public.spend_confirmation(session_id, user_id, 'delete_account',
      nonce, wallet_address, message_chain_id, identity_chain_id, creator_bucket_prefix,
      creator_limit, window_seconds);
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

-- As in 20261126100500_vault.sql, with its buckets handed in.
create function public.unlock_reveals(
  session_id uuid, user_id uuid, nonce text, wallet_address text, message_chain_id bigint,
  identity_chain_id bigint, creator_bucket_prefix text, creator_limit integer,
  window_seconds integer
)
  returns table (outcome text, retry_after integer)
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  declare
    spent record;
  begin
    select * into spent from public.spend_confirmation(session_id, user_id, 'unlock',
      nonce, wallet_address, message_chain_id, identity_chain_id, creator_bucket_prefix,
      creator_limit, window_seconds);
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

-- As in 20261126100500_vault.sql, with its buckets handed in.
create function public.put_user_secret(
  session_id uuid, user_id uuid, secret_type text, ciphertext bytea, iv bytea, key_id text,
  hint text, write_bucket_prefix text, write_limit integer, window_seconds integer
)
  returns table (outcome text, updated_at timestamptz, created boolean, retry_after integer)
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  #variable_conflict use_column
  declare
    attempt record;
    stored_at timestamptz;
    is_new boolean;
  begin
    if not public.session_is_live_for(put_user_secret.session_id, put_user_secret.user_id) then
      return query select 'session_revoked'::text, null::timestamptz, null::boolean, null::integer;
      return;
    end if;
    select * into attempt from public.hit_rate_limit(
      put_user_secret.write_bucket_prefix || put_user_secret.user_id,
        put_user_secret.window_seconds);
    if attempt.hits > put_user_secret.write_limit then
      return query select 'rate_limited'::text, null::timestamptz, null::boolean,
        greatest(1, attempt.retry_after);
      return;
    end if;
    -- updated_at always moves forward on a replace, even if the clock stepped back, so the audit
    -- trigger tells a creator's replacement from a key rotation (which keeps updated_at).
    insert into public.user_secrets as s (user_id, secret_type, ciphertext, iv, key_id, hint)
      values (put_user_secret.user_id, put_user_secret.secret_type, put_user_secret.ciphertext,
        put_user_secret.iv, put_user_secret.key_id, put_user_secret.hint)
    on conflict (user_id, secret_type) do update
      set ciphertext = excluded.ciphertext, iv = excluded.iv, key_id = excluded.key_id,
          hint = excluded.hint,
          updated_at = greatest(now(), s.updated_at + interval '1 microsecond')
    returning s.updated_at, (s.xmax = 0) into stored_at, is_new;
    return query select 'stored'::text, stored_at, is_new, null::integer;
  end
  $$;

-- As in 20261126100500_vault.sql, with its buckets handed in.
create function public.delete_user_secret(
  session_id uuid, user_id uuid, secret_type text, write_bucket_prefix text, write_limit integer,
  window_seconds integer
)
  returns table (outcome text, retry_after integer)
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  #variable_conflict use_column
  declare
    attempt record;
  begin
    if not public.session_is_live_for(delete_user_secret.session_id, delete_user_secret.user_id) then
      return query select 'session_revoked'::text, null::integer;
      return;
    end if;
    select * into attempt from public.hit_rate_limit(
      delete_user_secret.write_bucket_prefix || delete_user_secret.user_id,
        delete_user_secret.window_seconds);
    if attempt.hits > delete_user_secret.write_limit then
      return query select 'rate_limited'::text, greatest(1, attempt.retry_after);
      return;
    end if;
    delete from public.user_secrets s
     where s.user_id = delete_user_secret.user_id and s.secret_type = delete_user_secret.secret_type;
    return query select case when found then 'deleted' else 'not_found' end, null::integer;
  end
  $$;

-- As in 20261126100500_vault.sql, with its buckets handed in.
create function public.lock_reveals(
  session_id uuid, user_id uuid, lock_bucket_prefix text, write_limit integer,
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
      lock_reveals.lock_bucket_prefix || lock_reveals.user_id, lock_reveals.window_seconds);
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

-- As in 20261126100600_audit.sql, with its buckets handed in.
create function public.refuse_reveal(
  client_bucket text, refusal_limit integer, window_seconds integer, session_id uuid, user_id uuid,
  creator_bucket_prefix text
)
  returns table (hits integer, retry_after integer, recorded boolean)
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  #variable_conflict use_column
  declare
    attempt record;
    creator_hits integer;
  begin
    select * into attempt
      from public.hit_rate_limit(refuse_reveal.client_bucket, refuse_reveal.window_seconds);
    if refuse_reveal.session_id is not null and attempt.hits <= refuse_reveal.refusal_limit + 1
      and public.session_is_live_for(refuse_reveal.session_id, refuse_reveal.user_id) then
      select limited.hits into creator_hits from public.hit_rate_limit(
        refuse_reveal.creator_bucket_prefix || refuse_reveal.user_id, refuse_reveal.window_seconds
      ) limited;
      if creator_hits <= refuse_reveal.refusal_limit + 1 then
        insert into public.secret_events (user_id, secret_types, action)
          values (refuse_reveal.user_id, '{}', 'reveal_refused');
        return query select attempt.hits, greatest(1, attempt.retry_after), true;
        return;
      end if;
    end if;
    return query select attempt.hits, greatest(1, attempt.retry_after), false;
  end
  $$;

-- The service's alone: Supabase grants new functions to the API roles by default.
revoke all on function public.admit_contract_check(text, text, bigint, text, text, integer, text,
  integer, integer, text, integer, integer) from public, anon, authenticated;
revoke all on function public.sign_in_with_nonce(text, text, bytea, integer, text, integer, integer,
  bigint, bigint, text) from public, anon, authenticated;
revoke all on function public.sign_in_from_ip(text, integer, text, text, bytea, integer, text,
  integer, integer, bigint, bigint, text) from public, anon, authenticated;
revoke all on function public.spend_confirmation(uuid, uuid, text, text, text, bigint, bigint, text,
  integer, integer) from public, anon, authenticated;
revoke all on function public.sign_out_sessions(uuid, uuid, text, text, bigint, bigint, uuid[],
  text, integer, integer) from public, anon, authenticated;
revoke all on function public.delete_account(uuid, uuid, text, text, bigint, bigint, text, integer,
  integer) from public, anon, authenticated;
revoke all on function public.unlock_reveals(uuid, uuid, text, text, bigint, bigint, text, integer,
  integer) from public, anon, authenticated;
revoke all on function public.put_user_secret(uuid, uuid, text, bytea, bytea, text, text, text,
  integer, integer) from public, anon, authenticated;
revoke all on function public.delete_user_secret(uuid, uuid, text, text, integer, integer) from
  public, anon, authenticated;
revoke all on function public.lock_reveals(uuid, uuid, text, integer, integer) from public, anon,
  authenticated;
revoke all on function public.refuse_reveal(text, integer, integer, uuid, uuid, text) from public,
  anon, authenticated;
grant execute on function public.admit_contract_check(text, text, bigint, text, text, integer, text,
  integer, integer, text, integer, integer) to service_role;
grant execute on function public.sign_in_with_nonce(text, text, bytea, integer, text, integer,
  integer, bigint, bigint, text) to service_role;
grant execute on function public.sign_in_from_ip(text, integer, text, text, bytea, integer, text,
  integer, integer, bigint, bigint, text) to service_role;
grant execute on function public.spend_confirmation(uuid, uuid, text, text, text, bigint, bigint,
  text, integer, integer) to service_role;
grant execute on function public.sign_out_sessions(uuid, uuid, text, text, bigint, bigint, uuid[],
  text, integer, integer) to service_role;
grant execute on function public.delete_account(uuid, uuid, text, text, bigint, bigint, text,
  integer, integer) to service_role;
grant execute on function public.unlock_reveals(uuid, uuid, text, text, bigint, bigint, text,
  integer, integer) to service_role;
grant execute on function public.put_user_secret(uuid, uuid, text, bytea, bytea, text, text, text,
  integer, integer) to service_role;
grant execute on function public.delete_user_secret(uuid, uuid, text, text, integer, integer) to
  service_role;
grant execute on function public.lock_reveals(uuid, uuid, text, integer, integer) to service_role;
grant execute on function public.refuse_reveal(text, integer, integer, uuid, uuid, text) to
  service_role;
