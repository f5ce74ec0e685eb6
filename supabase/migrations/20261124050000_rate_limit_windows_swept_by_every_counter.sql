-- Old rate-limit windows used to be swept by the TypeScript that read a count (1 in 100 calls).
-- Since the nonce, the sign-in and the vault count inside their own SQL functions, that sweep ran
-- only on failed proofs. The counter itself now sweeps, so every path that counts also cleans up.
create or replace function public.hit_rate_limit(bucket text, window_seconds integer)
  returns table (hits integer, retry_after integer)
  language plpgsql set search_path = public, pg_temp
  as $$
  #variable_conflict use_column
  begin
    -- Now and then, by whoever passes by: no scheduler needed, and at most a few stale rows.
    if random() < 0.01 then
      delete from public.rate_limit_windows w where w.window_start < now() - interval '1 hour';
    end if;
    return query
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
          - extract(epoch from now()))::integer;
  end
  $$;
