/**
 * What-ifs for `deno task bench:profile`, created only in its throwaway database: measurements for
 * changes outside bench/ (the SQL and the driver are not the bench's), so their gain is known
 * before anyone makes them.
 */
import type { Profiled } from "./profile-setup.ts";

/** Creates the what-ifs in the profile's throwaway database. */
export async function createWhatIfs({ bench }: Profiled) {
  await bench.sql(`
    -- The nonce's rate limit and insert as one statement: one round trip, one commit.
    create function public.profile_issue_nonce(n text, ttl integer, bucket text, max_hits integer)
      returns table (issued_at timestamptz, expires_at timestamptz, hits integer)
      language plpgsql as $$
      declare
        attempt record;
      begin
        select * into attempt from public.hit_rate_limit(bucket, 60);
        if attempt.hits > max_hits then
          return query select null::timestamptz, null::timestamptz, attempt.hits;
          return;
        end if;
        return query insert into public.auth_nonces as a (nonce, expires_at)
          values (n, now() + make_interval(secs => ttl))
          returning a.issued_at, a.expires_at, attempt.hits;
      end $$;
    -- Rate-limit counters that are not WAL-logged: their commits need no flush.
    create unlogged table public.profile_rate_limit_windows (like public.rate_limit_windows including all);
  `);
}
