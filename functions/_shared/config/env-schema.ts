/**
 * The environment variables configuration reads, as one zod schema: each one's type, bounds and
 * default. What they mean together (and what production requires) is config.ts's business.
 */
import { z } from "zod";
import { HEADER_SAFE_TOKEN } from "../http/reveal-header.ts";

export type Env = Readonly<Record<string, string | undefined>>;

/** The process environment. Configuration (config.ts) is the one reader of it in a function. */
export function processEnv(): Env {
  return Deno.env.toObject();
}

/**
 * The database to use and the variable that named it: DATABASE_URL, else SUPABASE_DB_URL (what
 * Supabase sets for a function).
 */
export function databaseUrl(
  env: { readonly DATABASE_URL?: string; readonly SUPABASE_DB_URL?: string },
): { readonly name: "DATABASE_URL" | "SUPABASE_DB_URL"; readonly url: string } | undefined {
  const own = env.DATABASE_URL?.trim();
  if (own) return { name: "DATABASE_URL", url: own };
  const supabase = env.SUPABASE_DB_URL?.trim();
  return supabase ? { name: "SUPABASE_DB_URL", url: supabase } : undefined;
}

export const FORWARDED_FOR = "x-forwarded-for";

/**
 * The headers CLIENT_IP_HEADER may name: X-Forwarded-For (a list, read from the right) and the
 * one-address headers proxies and CDNs set to the address they saw (nginx, Cloudflare, Akamai,
 * Fastly, Fly.io, Azure, Google App Engine). Any other header carries something else, and the local
 * server overwrites the configured one with the socket's address: `authorization`, `cookie`, `host`
 * or `x-service-server-secret` there would give every client one bucket and lose a credential.
 */
const CLIENT_IP_HEADERS = [
  FORWARDED_FOR,
  "x-real-ip",
  "cf-connecting-ip",
  "true-client-ip",
  "fastly-client-ip",
  "fly-client-ip",
  "x-client-ip",
  "x-cluster-client-ip",
  "x-appengine-user-ip",
] as const;

const blankToUndefined = (value: unknown) =>
  typeof value === "string" && value.trim() === "" ? undefined : value;
const optionalString = z.preprocess(blankToUndefined, z.string().trim().optional());
const positiveInt = (fallback: number, max: number) =>
  z.preprocess(blankToUndefined, z.coerce.number().int().min(1).max(max).default(fallback));
const secretString = (name: string) =>
  z.preprocess(
    blankToUndefined,
    z.string().min(32, `${name} must be at least 32 characters`).optional(),
  );
/**
 * A secret that callers send as an HTTP header value. Clients strip a header value's surrounding
 * whitespace and cannot send control characters, so a token saved with a trailing newline (a
 * paste) could never be presented and every call would be refused as a wrong token.
 */
const headerSecretString = (name: string) =>
  z.preprocess(
    blankToUndefined,
    z.string().min(32, `${name} must be at least 32 characters`).regex(
      HEADER_SAFE_TOKEN,
      `${name} must be printable ASCII without spaces or line breaks (it is sent as a header)`,
    ).optional(),
  );
export const envSchema = z.object({
  // No default here: parseConfig supplies the caller's (development locally, production deployed).
  APP_ENV: z.preprocess(blankToUndefined, z.enum(["development", "test", "production"])),
  PORT: z.preprocess(blankToUndefined, z.coerce.number().int().min(0).max(65535).default(54321)),
  PROJECT_NAME: optionalString,
  DATABASE_URL: optionalString,
  SUPABASE_DB_URL: optionalString,
  DATABASE_MAX_CONNECTIONS: z.preprocess(
    blankToUndefined,
    z.coerce.number().int().min(1).max(1000).optional(),
  ),
  DATABASE_PREPARE: z.preprocess(blankToUndefined, z.enum(["true", "false", "1", "0"]).optional()),
  DATABASE_TIMEOUT_MS: positiveInt(5000, 600_000),
  PGLITE_DATA_DIR: optionalString,
  ENCRYPTION_KEYS: optionalString,
  ENCRYPTION_KEY: optionalString,
  SERVER_REVEAL_TOKEN: headerSecretString("SERVER_REVEAL_TOKEN"),
  JWT_SECRET: secretString("JWT_SECRET"),
  ALLOWED_ORIGINS: optionalString,
  ALLOWED_CHAIN_IDS: optionalString,
  NONCE_TTL_SECONDS: positiveInt(600, 86_400),
  // Clients refresh a minute before expiry (sdk/browser.ts): a shorter life would mean a refresh
  // before every call, soon over the refresh limit.
  ACCESS_TOKEN_TTL_SECONDS: z.preprocess(
    blankToUndefined,
    z.coerce.number().int().min(120, "must be at least 120 (clients refresh 60 s before expiry)")
      .max(86_400).default(3600),
  ),
  REFRESH_TOKEN_TTL_SECONDS: positiveInt(30 * 86_400, 365 * 86_400),
  RATE_LIMIT_NONCE_PER_MINUTE: positiveInt(60, 1_000_000),
  RATE_LIMIT_PROOF_PER_MINUTE: positiveInt(30, 1_000_000),
  RATE_LIMIT_PROOF_PER_ADDRESS_PER_MINUTE: positiveInt(10, 1_000_000),
  RATE_LIMIT_REFRESH_PER_MINUTE: positiveInt(60, 1_000_000),
  RATE_LIMIT_VAULT_WRITES_PER_MINUTE: positiveInt(60, 1_000_000),
  RATE_LIMIT_REVEALS_PER_MINUTE: positiveInt(60, 1_000_000),
  RATE_LIMIT_REVEALS_PER_TOKEN_PER_MINUTE: positiveInt(6000, 1_000_000),
  RATE_LIMIT_WRONG_REVEAL_TOKENS_PER_MINUTE: positiveInt(10, 1_000_000),
  CLIENT_IP_HEADER: z.preprocess(
    (value) => {
      const given = blankToUndefined(value);
      return typeof given === "string" ? given.trim().toLowerCase() : given;
    },
    z.enum(CLIENT_IP_HEADERS, {
      error: `must be one of ${CLIENT_IP_HEADERS.join(", ")} (a header a trusted proxy sets to ` +
        "the client's address)",
    }).default(FORWARDED_FOR),
  ),
  CLIENT_IP_TRUSTED_HOPS: z.preprocess(
    blankToUndefined,
    z.coerce.number().int().min(1).max(10).optional(),
  ),
  RATE_LIMIT_RPC_PER_MINUTE: positiveInt(10, 1_000_000),
  // Every client together, per wallet and chain: well above one client's share (next line), so one
  // client alone can never use a wallet's budget up.
  RATE_LIMIT_RPC_PER_ADDRESS_PER_MINUTE: positiveInt(100, 1_000_000),
  RATE_LIMIT_RPC_PER_ADDRESS_PER_CLIENT_PER_MINUTE: positiveInt(5, 1_000_000),
  CHAIN_RPC_URLS: optionalString,
  CHAIN_RPC_TIMEOUT_MS: positiveInt(3000, 60_000),
  SUPABASE_URL: optionalString,
  SUPABASE_ANON_KEY: optionalString,
  SUPABASE_PUBLISHABLE_KEYS: optionalString,
});
