/**
 * Fixed-window rate limits kept in Postgres, so every function instance counts against the same
 * window. One upsert per check.
 */
import type { Queryable } from "./db.ts";
import { ServiceError } from "./errors.ts";

export interface RateLimit {
  readonly bucket: string;
  readonly limit: number;
  readonly windowSeconds?: number;
}

export async function enforceRateLimit(
  db: Queryable,
  { bucket, limit, windowSeconds = 60 }: RateLimit,
) {
  const [row] = await db.query<{ hits: number; retry_after: number }>(
    `insert into public.rate_limit_windows as w (bucket, window_start, hits)
       values ($1, to_timestamp(floor(extract(epoch from now()) / $2) * $2), 1)
     on conflict (bucket, window_start) do update set hits = w.hits + 1
     returning w.hits,
       ceil(extract(epoch from w.window_start) + $2 - extract(epoch from now()))::int as retry_after`,
    [bucket, windowSeconds],
  );
  if (row.hits > limit) {
    const retryAfter = Math.max(1, row.retry_after);
    throw new ServiceError(
      "rate_limited",
      "Too many requests; slow down.",
      { retryAfterSeconds: retryAfter },
      { "retry-after": String(retryAfter) },
    );
  }
  // Old windows are swept now and then by whoever passes by, so no scheduler is needed.
  if (Math.random() < 0.01) {
    await db.query(
      "delete from public.rate_limit_windows where window_start < now() - interval '1 hour'",
    );
  }
}

/** The caller's address as the edge saw it (Supabase's gateway and the local server both set it). */
export function clientIp(request: Request): string {
  const first = request.headers.get("x-forwarded-for")?.split(",")[0].trim() ?? "";
  // Only an IP literal names a bucket. Where an edge passes on what the client sent, anything else
  // would be a key of the client's choosing, and a long one fails the insert (a 500, not a 429).
  return /^[0-9A-Fa-f:.]{2,45}$/.test(first) ? first : "unknown";
}
