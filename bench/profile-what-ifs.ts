/**
 * What-ifs for `deno task bench:profile`, created only in its throwaway database: measurements for
 * changes outside bench/ (the SQL and the driver are not the bench's), so their gain is known
 * before anyone makes them.
 */
import type { Profiled } from "./profile-setup.ts";

/** Creates the what-ifs in the profile's throwaway database. */
export async function createWhatIfs({ bench }: Profiled) {
  await bench.sql(`
    -- Rate-limit counters that are not WAL-logged: their commits need no flush.
    create unlogged table public.profile_rate_limit_windows (like public.rate_limit_windows including all);
  `);
}
