/**
 * Fixed-window rate limits kept in Postgres, so every function instance counts against the same
 * window. One upsert per check (`public.hit_rate_limit`, which sign-in also calls in SQL). Every
 * budget, its bucket and its limit are declared in config/limits.ts.
 */
import type { ClientIpSource } from "../config/app-config.ts";
import { FORWARDED_FOR } from "../config/env-schema.ts";
import type { Budget } from "../config/limits.ts";
import { type Database, queryWithoutWaitingForFlush } from "../db/db.ts";
import { ServiceError } from "../http/errors.ts";

/**
 * Counts one hit; over the limit, 429. Old windows are swept by public.hit_rate_limit itself. The
 * count commits without waiting for the flush: it is what a refused request writes (a proof that
 * failed), so waiting would let anyone make the database flush at will, 429s included.
 */
export async function enforceRateLimit(
  db: Pick<Database, "batch">,
  { bucket, limit, windowSeconds }: Budget,
): Promise<void> {
  const [row] = await queryWithoutWaitingForFlush<{ hits: number; retry_after: number }>(db, {
    text: "select hits, retry_after from public.hit_rate_limit($1, $2)",
    params: [bucket, windowSeconds],
  });
  if (row.hits > limit) throw rateLimited(row.retry_after);
}

export function rateLimited(retryAfterSeconds: number): ServiceError {
  const retryAfter = Math.max(1, retryAfterSeconds);
  return new ServiceError(
    "rate_limited",
    "Too many requests; slow down.",
    { retryAfterSeconds: retryAfter },
  );
}

/** The bucket every request shares when no trustworthy address can be read. */
const UNKNOWN_CLIENT = "unknown";

/**
 * The client's address as the trusted proxies recorded it, per `source` (CLIENT_IP_HEADER and
 * CLIENT_IP_TRUSTED_HOPS). X-Forwarded-For is read from the right: a proxy appends the address it
 * saw, so the entries a client sends itself stay on the left, and the entry `trustedHops` places
 * from the right is the last one a trusted proxy wrote. Anything missing or malformed, and a list
 * shorter than the hop count (the request did not come through those proxies), gives one shared
 * bucket: never a key of the client's choosing, never a 500 from an odd value.
 */
export function clientIp(request: Request, source: ClientIpSource): string {
  const value = request.headers.get(source.header);
  if (value === null) return UNKNOWN_CLIENT;
  let entry: string | undefined = value;
  if (source.header === FORWARDED_FOR) {
    const entries = value.split(",");
    entry = entries[entries.length - source.trustedHops];
  }
  return (entry === undefined ? null : rateLimitAddress(entry.trim())) ?? UNKNOWN_CLIENT;
}

/**
 * An IP literal as one canonical bucket name (so `::1` and `0:0::1` are one client), or null.
 * IPv6 counts per /64, the block one subscriber is usually given: per address, a client with a
 * /64 would have 2^64 budgets. An IPv4-mapped IPv6 address counts as its IPv4 address.
 */
function rateLimitAddress(text: string): string | null {
  if (text.length === 0 || text.length > 45) return null;
  const ipv4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (ipv4 !== null) {
    const octets = ipv4.slice(1).map(Number);
    return octets.every((octet) => octet <= 255) ? octets.join(".") : null;
  }
  if (!/^[0-9A-Fa-f:.]+$/.test(text) || !text.includes(":")) return null;
  let hostname: string;
  try {
    hostname = new URL(`http://[${text}]/`).hostname; // WHATWG's IPv6 parser: validates, compresses
  } catch {
    return null;
  }
  const groups = expandIpv6(hostname.slice(1, -1));
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return [groups[6] >> 8, groups[6] & 0xff, groups[7] >> 8, groups[7] & 0xff].join(".");
  }
  return `${groups.slice(0, 4).map((g) => g.toString(16)).join(":")}::/64`;
}

/** The eight 16-bit groups of a serialized IPv6 address (hex groups only, as URL writes them). */
function expandIpv6(address: string): number[] {
  const [head, tail] = address.includes("::") ? address.split("::") : [address, null];
  const parse = (part: string) => part === "" ? [] : part.split(":").map((g) => parseInt(g, 16));
  const left = parse(head);
  const right = tail === null ? [] : parse(tail);
  return [...left, ...Array(8 - left.length - right.length).fill(0), ...right];
}
