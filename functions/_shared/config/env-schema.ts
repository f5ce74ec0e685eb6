/**
 * The environment variables configuration reads, as one table: each one's type, bounds and
 * default, read by `readEnvVars`. What they mean together (and what production requires) is
 * config.ts's business. Hand-written rather than a schema library's, so that a function's cold
 * start does not build and compile schemas for it.
 */
import { HEADER_SAFE_TOKEN } from "../../../protocol/reveal-header.ts";
import { RATE_LIMIT_RANGE, RATE_LIMITS, type RateLimitVariable } from "./limits.ts";

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

/** Free text, trimmed. */
interface TextSpec {
  readonly kind: "text";
}

/**
 * A secret of at least 32 characters, kept exactly as given. `headerSafe`: callers send it as an
 * HTTP header value, and clients strip a header value's surrounding whitespace and cannot send
 * control characters, so a token saved with a trailing newline (a paste) could never be presented
 * and every call would be refused as a wrong token.
 */
interface SecretSpec {
  readonly kind: "secret";
  readonly headerSafe: boolean;
}

/** A decimal integer from `min` to `max`; `fallback` when unset; `unbounded` (a word) reads null. */
interface IntegerSpec {
  readonly kind: "integer";
  readonly min: number;
  readonly max: number;
  readonly fallback: number | undefined;
  readonly unbounded?: string;
  /** Why values below `min` are refused, when the range alone does not say it. */
  readonly belowMin?: string;
}

/**
 * One of `options`, compared exactly unless `lowerCase` (then trimmed and lower-cased first);
 * `fallback` when unset, or refused when unset and `required`.
 */
interface ChoiceSpec {
  readonly kind: "choice";
  readonly options: readonly string[];
  readonly fallback?: string;
  readonly required?: boolean;
  readonly lowerCase?: boolean;
  readonly refusal?: string;
}

export type VariableSpec = TextSpec | SecretSpec | IntegerSpec | ChoiceSpec;

const TEXT = { kind: "text" } as const;
const SECRET = { kind: "secret", headerSafe: false } as const;
const HEADER_SECRET = { kind: "secret", headerSafe: true } as const;
const integer = <F extends number | undefined>(min: number, max: number, fallback: F) =>
  ({ kind: "integer", min, max, fallback }) as const;

/** The rate limits' variables, each with its default from limits.ts's table. */
const RATE_LIMIT_VARIABLES = Object.fromEntries(
  Object.values(RATE_LIMITS).map((limit) => [
    limit.variable,
    integer(RATE_LIMIT_RANGE.min, RATE_LIMIT_RANGE.max, limit.default as number),
  ]),
) as { readonly [Name in RateLimitVariable]: ReturnType<typeof integer<number>> };

export const ENV_VARS = {
  // No default here: config.ts supplies the caller's (development locally, production deployed).
  APP_ENV: { kind: "choice", options: ["development", "test", "production"], required: true },
  PORT: integer(0, 65_535, 54_321),
  PROJECT_NAME: TEXT,
  DATABASE_URL: TEXT,
  SUPABASE_DB_URL: TEXT,
  DATABASE_MAX_CONNECTIONS: integer(1, 1000, undefined),
  DATABASE_PREPARE: { kind: "choice", options: ["true", "false", "1", "0"] },
  DATABASE_TIMEOUT_MS: integer(1, 600_000, 5000),
  PGLITE_DATA_DIR: TEXT,
  ENCRYPTION_KEYS: TEXT,
  ENCRYPTION_KEY: TEXT,
  SERVER_REVEAL_TOKEN: HEADER_SECRET,
  JWT_SECRET: SECRET,
  // Private JWKs as `supabase gen signing-key` writes them (session-keys.ts reads them).
  JWT_SIGNING_KEYS: TEXT,
  // HS256 under JWT_SECRET, chosen explicitly: "sign" (legacy), "verify" (migrating away from it).
  JWT_LEGACY_HS256: { kind: "choice", options: ["sign", "verify"], lowerCase: true },
  JWT_ISSUER: TEXT,
  ALLOWED_ORIGINS: TEXT,
  ALLOWED_CHAIN_IDS: TEXT,
  NONCE_TTL_SECONDS: integer(1, 86_400, 600),
  // Clients refresh a minute before expiry (sdk/src/browser.ts): a shorter life would mean a refresh
  // before every call, soon over the refresh limit.
  ACCESS_TOKEN_TTL_SECONDS: {
    ...integer(120, 86_400, 3600),
    belowMin: "must be at least 120 (clients refresh 60 s before expiry)",
  },
  REFRESH_TOKEN_TTL_SECONDS: integer(1, 365 * 86_400, 30 * 86_400),
  ...RATE_LIMIT_VARIABLES,
  // How long audit events are kept; "forever" keeps every one (docs/operations.md, "Retention").
  AUDIT_RETENTION_DAYS: { ...integer(1, 36_500, 400), unbounded: "forever" },
  CLIENT_IP_HEADER: {
    kind: "choice",
    options: CLIENT_IP_HEADERS,
    fallback: FORWARDED_FOR,
    lowerCase: true,
    refusal: `must be one of ${CLIENT_IP_HEADERS.join(", ")} (a header a trusted proxy sets to ` +
      "the client's address)",
  },
  CLIENT_IP_TRUSTED_HOPS: integer(1, 10, undefined),
  CHAIN_RPC_URLS: TEXT,
  CHAIN_RPC_TIMEOUT_MS: integer(1, 60_000, 3000),
  SUPABASE_URL: TEXT,
  SUPABASE_ANON_KEY: TEXT,
  SUPABASE_PUBLISHABLE_KEYS: TEXT,
} as const satisfies Record<string, VariableSpec>;

/** The TypeScript type of what `spec` reads. */
type ValueOf<S> = S extends IntegerSpec
  ? number | S["fallback"] | (S extends { readonly unbounded: string } ? null : never)
  : S extends { readonly kind: "choice"; readonly options: readonly (infer T)[] }
    ? S extends { readonly fallback: string } | { readonly required: true } ? T : T | undefined
  : string | undefined;

export type EnvVars = { readonly [Name in keyof typeof ENV_VARS]: ValueOf<typeof ENV_VARS[Name]> };

/**
 * Every variable of ENV_VARS read from `env`, or every problem at once as `NAME: message`. A value
 * that is empty after trimming counts as unset. No message quotes the value given.
 */
export function readEnvVars(
  env: Env,
): { readonly vars: EnvVars; readonly problems?: undefined } | { readonly problems: string[] } {
  const vars: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [name, spec] of Object.entries(ENV_VARS) as [string, VariableSpec][]) {
    const given = env[name];
    const value = typeof given === "string" && given.trim() !== "" ? given : undefined;
    vars[name] = readVariable(name, spec, value, (message) => problems.push(`${name}: ${message}`));
  }
  return problems.length > 0 ? { problems } : { vars: vars as EnvVars };
}

const DECIMAL_INTEGER = /^-?\d+$/;

/** One variable's value, `undefined` when it is unset and has no fallback. */
function readVariable(
  name: string,
  spec: VariableSpec,
  given: string | undefined,
  refuse: (message: string) => void,
): unknown {
  switch (spec.kind) {
    case "text":
      return given?.trim();
    case "secret":
      if (given === undefined) return undefined;
      if (given.length < 32) refuse(`${name} must be at least 32 characters`);
      if (spec.headerSafe && !HEADER_SAFE_TOKEN.test(given)) {
        refuse(
          `${name} must be printable ASCII without spaces or line breaks (it is sent as a header)`,
        );
      }
      return given;
    case "integer": {
      if (given === undefined) return spec.fallback;
      const text = given.trim();
      if (spec.unbounded !== undefined && text.toLowerCase() === spec.unbounded) return null;
      const value = DECIMAL_INTEGER.test(text) ? Number(text) : NaN;
      const or = spec.unbounded === undefined ? "" : `, or ${spec.unbounded}`;
      if (value < spec.min && spec.belowMin !== undefined) refuse(spec.belowMin);
      else if (!(value >= spec.min && value <= spec.max)) {
        refuse(`must be an integer from ${spec.min} to ${spec.max}${or}`);
      }
      return value;
    }
    case "choice": {
      const value = spec.lowerCase ? given?.trim().toLowerCase() : given;
      if (value === undefined && !spec.required) return spec.fallback;
      if (value === undefined || !spec.options.includes(value)) {
        refuse(spec.refusal ?? `must be one of ${spec.options.join(", ")}`);
      }
      return value;
    }
  }
}
