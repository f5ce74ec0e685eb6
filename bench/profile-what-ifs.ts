/**
 * What-ifs for `deno task bench:profile`, created only in its throwaway database: measurements for
 * changes outside bench/ (the SQL and the driver are not the bench's), so their gain is known
 * before anyone makes them.
 */
import { SECRET_TYPES } from "../functions/_shared/vault/secret-types.ts";
import type { Profiled } from "./profile-setup.ts";

/** Creates the what-ifs and checks that the what-if read answers as the service's does. */
export async function createWhatIfs({ bench, db, session, userId }: Profiled) {
  await bench.sql(`
    -- GET's session check, role switch and read as one statement: no BEGIN, no COMMIT.
    create function public.profile_list_as_live_session(claims text, sid uuid, uid uuid, types text[])
      returns table (secret_type text, updated_at timestamptz, hint text, live boolean)
      language plpgsql as $$
      declare
        is_live boolean;
      begin
        select exists(select 1 from public.auth_sessions s where s.id = sid and s.user_id = uid
          and s.revoked_at is null and s.expires_at > now()) into is_live;
        perform set_config('request.jwt.claims', claims, true);
        perform set_config('role', case when is_live then 'authenticated' else 'anon' end, true);
        if not is_live then
          return query select null::text, null::timestamptz, null::text, false;
          return;
        end if;
        return query select u.secret_type, u.updated_at, u.hint, true from public.user_secrets u
          where u.user_id = uid order by array_position(types, u.secret_type);
      end $$;
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
  {
    // The what-if read answers what the service's does: the seven rows while the session is live.
    const rows = await db.query<{ live: boolean }>(
      "select * from public.profile_list_as_live_session($1, $2, $3, $4)",
      [JSON.stringify(session.claims), session.sessionId, userId, SECRET_TYPES],
    );
    const ended = await db.query<{ live: boolean }>(
      "select * from public.profile_list_as_live_session($1, $2, $3, $4)",
      [JSON.stringify(session.claims), crypto.randomUUID(), userId, SECRET_TYPES],
    );
    if (rows.length !== 7 || !rows.every((r) => r.live) || ended[0]?.live !== false) {
      throw new Error("the what-if read does not answer as the service does");
    }
  }
}
