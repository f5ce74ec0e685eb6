/**
 * Fixed-window rate limits kept in Postgres, so every function instance counts against the same
 * window. One upsert per check (`public.hit_rate_limit`, which sign-in also calls in SQL).
 */
import type { Queryable } from "./db.ts";
import { ServiceError } from "./errors.ts";

/** Every limit counts per minute. */
export const RATE_LIMIT_WINDOW_SECONDS = 60;

export interface RateLimit {
  readonly bucket: string;
  readonly limit: number;
  readonly windowSeconds?: number;
}

export async function enforceRateLimit(
  db: Queryable,
  { bucket, limit, windowSeconds = RATE_LIMIT_WINDOW_SECONDS }: RateLimit,
) {
  const [row] = await db.query<{ hits: number; retry_after: number }>(
    "select hits, retry_after from public.hit_rate_limit($1, $2)",
    [bucket, windowSeconds],
  );
  if (row.hits > limit) throw rateLimited(row.retry_after);
  // Old windows are swept now and then by whoever passes by, so no scheduler is needed.
  if (Math.random() < 0.01) {
    await db.query(
      "delete from public.rate_limit_windows where window_start < now() - interval '1 hour'",
    );
  }
}

export function rateLimited(retryAfterSeconds: number): ServiceError {
  const retryAfter = Math.max(1, retryAfterSeconds);
  return new ServiceError(
    "rate_limited",
    "Too many requests; slow down.",
    { retryAfterSeconds: retryAfter },
    { "retry-after": String(retryAfter) },
  );
}

/** The caller's address as the edge saw it (Supabase's gateway and the local server both set it). */
export function clientIp(request: Request): string {
  const first = request.headers.get("x-forwarded-for")?.split(",")[0].trim() ?? "";
  // Only an IP literal names a bucket. Where an edge passes on what the client sent, anything else
  // would be a key of the client's choosing, and a long one fails the insert (a 500, not a 429).
  return /^[0-9A-Fa-f:.]{2,45}$/.test(first) ? first : "unknown";
}
