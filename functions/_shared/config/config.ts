/**
 * Configuration, validated with zod in this one module. Every function and the local server read
 * their settings through `parseConfig`; nothing else touches `Deno.env`.
 */
import { z } from "zod";
import type { DatabaseSettings } from "../db/db.ts";

export type AppEnv = "development" | "test" | "production";

export interface EncryptionKeySpec {
  readonly id: string;
  readonly key: Uint8Array;
}

/**
 * Where the client's address comes from (per-IP rate limits). Only what a trusted proxy wrote may
 * choose the bucket: never the leftmost X-Forwarded-For entry, which the client can write itself.
 */
export interface ClientIpSource {
  /** Lowercase header name: `x-forwarded-for`, or a single-address header (`cf-connecting-ip`). */
  readonly header: string;
  /**
   * x-forwarded-for only: how many trusted proxies append to it. The client's address is the
   * entry this many places from the right (1: the rightmost, what the last proxy saw).
   */
  readonly trustedHops: number;
}

export const FORWARDED_FOR = "x-forwarded-for";

export interface AppConfig {
  readonly appEnv: AppEnv;
  readonly port: number;
  readonly projectName: string;
  readonly database: DatabaseSettings;
  /** First key encrypts; every key decrypts (rotation). */
  readonly encryptionKeys: readonly EncryptionKeySpec[];
  readonly serverRevealToken: string;
  readonly jwtSecret: string;
  /** Origins whose EIP-4361 `domain`/`uri` are accepted and that CORS lets in. Empty: own origin only. */
  readonly allowedOrigins: readonly string[];
  /** null: any chain. */
  readonly allowedChainIds: readonly number[] | null;
  readonly nonceTtlSeconds: number;
  readonly accessTokenTtlSeconds: number;
  readonly refreshTokenTtlSeconds: number;
  readonly rateLimits: {
    readonly noncePerIpPerMinute: number;
    readonly proofPerIpPerMinute: number;
    readonly proofPerAddressPerMinute: number;
    /** Vault PUTs and DELETEs per creator. */
    readonly vaultWritesPerMinute: number;
    /** Reveals per creator. */
    readonly revealsPerMinute: number;
    /** Reveals per server reveal token, every creator together. */
    readonly revealsPerTokenPerMinute: number;
    /** Contract-wallet checks (RPC calls) per client IP, and per address, per minute. */
    readonly rpcPerIpPerMinute: number;
    readonly rpcPerAddressPerMinute: number;
  };
  readonly clientIp: ClientIpSource;
  /**
   * CHAIN_RPC_URLS: the JSON-RPC endpoint per chain id that contract-wallet signatures (ERC-1271,
   * ERC-6492) are checked on. A URL may carry an API key: it is never logged or answered.
   */
  readonly chainRpcUrls: ReadonlyMap<number, string>;
  /** The deadline for one contract-wallet check, every RPC call in it included. */
  readonly chainRpcTimeoutMs: number;
  readonly supabase: {
    readonly url: string | null;
    readonly anonKey: string | null;
    readonly serviceRoleKey: string | null;
  };
  /**
   * The project's public keys (SUPABASE_ANON_KEY and every SUPABASE_PUBLISHABLE_KEYS value).
   * supabase-js sends one as the bearer when the app has no session: that means "no session".
   */
  readonly publicApiKeys: readonly string[];
}

/** Defaults that differ between a deployed function and the local server. */
export interface ConfigDefaults {
  /**
   * Connections per process. A function isolate is short-lived and there are many of them, each
   * with its own pool behind one shared pooler, so functions keep theirs small.
   */
  readonly maxConnections: number;
}

export const LOCAL_SERVER_DEFAULTS: ConfigDefaults = { maxConnections: 10 };
export const FUNCTION_DEFAULTS: ConfigDefaults = { maxConnections: 3 };

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`Configuration refused: ${problems.join("; ")}`);
    this.name = "ConfigError";
  }
}

/** Settings production refuses to start without (fail closed). */
export const REQUIRED_IN_PRODUCTION = [
  "DATABASE_URL (or SUPABASE_DB_URL)",
  "ENCRYPTION_KEYS (or ENCRYPTION_KEY)",
  "SERVER_REVEAL_TOKEN",
  "JWT_SECRET",
  "ALLOWED_ORIGINS",
] as const;

/**
 * The marks the local server puts on the development keys it generates (server/dev-keys.ts), so
 * production refuses them wherever they are copied to: the secrets start with `dev-`, and every
 * development encryption key's base64 text starts with `devKeyNotForProd` (its first 12 bytes).
 */
export const DEV_SECRET_PREFIX = "dev-";
export const DEV_ENCRYPTION_KEY_MARK = "devKeyNotForProd";
const DEV_KEY_MARK_BYTES = Uint8Array.from(atob(DEV_ENCRYPTION_KEY_MARK), (c) => c.charCodeAt(0));

const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;
const SINGLE_KEY_ID = "k1";

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
const envSchema = z.object({
  APP_ENV: z.preprocess(
    blankToUndefined,
    z.enum(["development", "test", "production"]).default("development"),
  ),
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
  SERVER_REVEAL_TOKEN: secretString("SERVER_REVEAL_TOKEN"),
  JWT_SECRET: secretString("JWT_SECRET"),
  ALLOWED_ORIGINS: optionalString,
  ALLOWED_CHAIN_IDS: optionalString,
  NONCE_TTL_SECONDS: positiveInt(600, 86_400),
  ACCESS_TOKEN_TTL_SECONDS: positiveInt(3600, 86_400),
  REFRESH_TOKEN_TTL_SECONDS: positiveInt(30 * 86_400, 365 * 86_400),
  RATE_LIMIT_NONCE_PER_MINUTE: positiveInt(60, 1_000_000),
  RATE_LIMIT_PROOF_PER_MINUTE: positiveInt(30, 1_000_000),
  RATE_LIMIT_PROOF_PER_ADDRESS_PER_MINUTE: positiveInt(10, 1_000_000),
  RATE_LIMIT_VAULT_WRITES_PER_MINUTE: positiveInt(60, 1_000_000),
  RATE_LIMIT_REVEALS_PER_MINUTE: positiveInt(60, 1_000_000),
  RATE_LIMIT_REVEALS_PER_TOKEN_PER_MINUTE: positiveInt(6000, 1_000_000),
  CLIENT_IP_HEADER: z.preprocess(
    blankToUndefined,
    z.string().trim().toLowerCase().regex(
      /^[a-z0-9][a-z0-9-]{0,63}$/,
      "must be a header name like x-forwarded-for or cf-connecting-ip",
    ).default(FORWARDED_FOR),
  ),
  CLIENT_IP_TRUSTED_HOPS: z.preprocess(
    blankToUndefined,
    z.coerce.number().int().min(1).max(10).optional(),
  ),
  RATE_LIMIT_RPC_PER_MINUTE: positiveInt(10, 1_000_000),
  RATE_LIMIT_RPC_PER_ADDRESS_PER_MINUTE: positiveInt(10, 1_000_000),
  CHAIN_RPC_URLS: optionalString,
  CHAIN_RPC_TIMEOUT_MS: positiveInt(3000, 60_000),
  SUPABASE_URL: optionalString,
  SUPABASE_ANON_KEY: optionalString,
  SUPABASE_SERVICE_ROLE_KEY: optionalString,
  SUPABASE_PUBLISHABLE_KEYS: optionalString,
});

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Validates the environment. Throws ConfigError naming every problem at once: malformed values
 * in any mode, and in production every missing required setting.
 */
export function parseConfig(env: Env, defaults: ConfigDefaults = LOCAL_SERVER_DEFAULTS): AppConfig {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const malformed = parsed.error.issues.map((issue) =>
      `${issue.path.join(".")}: ${issue.message}`
    );
    throw new ConfigError(
      env.APP_ENV === "production" ? [...missingInProduction(env), ...malformed] : malformed,
    );
  }
  const vars = parsed.data;
  const problems: string[] = [];
  const production = vars.APP_ENV === "production";

  const databaseUrl = vars.DATABASE_URL ?? vars.SUPABASE_DB_URL;
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push("DATABASE_URL must be a postgres:// or postgresql:// URL");
  }
  const encryptionKeys = parseKeyring(
    vars.ENCRYPTION_KEYS,
    vars.ENCRYPTION_KEY,
    problems,
    production,
  );
  const allowedOrigins = parseOrigins(vars.ALLOWED_ORIGINS, problems);
  const allowedChainIds = parseChainIds(vars.ALLOWED_CHAIN_IDS, problems);
  const publishableKeys = parsePublishableKeys(vars.SUPABASE_PUBLISHABLE_KEYS, problems);
  if (vars.CLIENT_IP_HEADER !== FORWARDED_FOR && (vars.CLIENT_IP_TRUSTED_HOPS ?? 1) !== 1) {
    // A single-address header has no hops to count; a count here means a misread setup.
    problems.push("CLIENT_IP_TRUSTED_HOPS applies only to CLIENT_IP_HEADER=x-forwarded-for");
  }
  const chainRpcUrls = parseChainRpcUrls(vars.CHAIN_RPC_URLS, production, problems);
  const supabaseUrl = vars.SUPABASE_URL === undefined
    ? null
    : parseOrigin(vars.SUPABASE_URL, "SUPABASE_URL", problems);

  if (production) {
    problems.unshift(...missingInProduction(env));
    problems.push(...weakSecrets(vars.SERVER_REVEAL_TOKEN, vars.JWT_SECRET));
    if (
      vars.ALLOWED_ORIGINS !== undefined && vars.ALLOWED_ORIGINS.split(",").every((o) => !o.trim())
    ) {
      problems.push("ALLOWED_ORIGINS names no origin (CORS would answer any origin)");
    }
  } else {
    // Development and tests get their keys from the local server's dev-key file or the test setup.
    if (encryptionKeys.length === 0) {
      problems.push("ENCRYPTION_KEYS (or ENCRYPTION_KEY) is not set");
    }
    if (vars.SERVER_REVEAL_TOKEN === undefined) problems.push("SERVER_REVEAL_TOKEN is not set");
    if (vars.JWT_SECRET === undefined) problems.push("JWT_SECRET is not set");
  }
  if (problems.length > 0) throw new ConfigError(problems);

  const database: DatabaseSettings = databaseUrl !== undefined
    ? {
      engine: "postgres",
      url: withoutPoolerHint(databaseUrl),
      maxConnections: vars.DATABASE_MAX_CONNECTIONS ?? defaults.maxConnections,
      // A transaction pooler hands each transaction whichever server connection is free, where a
      // statement prepared on another one does not exist.
      prepare: !isPoolerUrl(databaseUrl) && vars.DATABASE_PREPARE !== "false" &&
        vars.DATABASE_PREPARE !== "0",
      queryTimeoutMs: vars.DATABASE_TIMEOUT_MS,
    }
    : { engine: "pglite", dataDir: vars.PGLITE_DATA_DIR ?? ".local/pglite" };

  return {
    appEnv: vars.APP_ENV,
    port: vars.PORT,
    projectName: vars.PROJECT_NAME ??
      (supabaseUrl ? new URL(supabaseUrl).hostname.split(".")[0] : "wallet-vault-local"),
    database,
    encryptionKeys,
    serverRevealToken: vars.SERVER_REVEAL_TOKEN!,
    jwtSecret: vars.JWT_SECRET!,
    allowedOrigins,
    allowedChainIds,
    nonceTtlSeconds: vars.NONCE_TTL_SECONDS,
    accessTokenTtlSeconds: vars.ACCESS_TOKEN_TTL_SECONDS,
    refreshTokenTtlSeconds: vars.REFRESH_TOKEN_TTL_SECONDS,
    rateLimits: {
      noncePerIpPerMinute: vars.RATE_LIMIT_NONCE_PER_MINUTE,
      proofPerIpPerMinute: vars.RATE_LIMIT_PROOF_PER_MINUTE,
      proofPerAddressPerMinute: vars.RATE_LIMIT_PROOF_PER_ADDRESS_PER_MINUTE,
      vaultWritesPerMinute: vars.RATE_LIMIT_VAULT_WRITES_PER_MINUTE,
      revealsPerMinute: vars.RATE_LIMIT_REVEALS_PER_MINUTE,
      revealsPerTokenPerMinute: vars.RATE_LIMIT_REVEALS_PER_TOKEN_PER_MINUTE,
      rpcPerIpPerMinute: vars.RATE_LIMIT_RPC_PER_MINUTE,
      rpcPerAddressPerMinute: vars.RATE_LIMIT_RPC_PER_ADDRESS_PER_MINUTE,
    },
    clientIp: { header: vars.CLIENT_IP_HEADER, trustedHops: vars.CLIENT_IP_TRUSTED_HOPS ?? 1 },
    chainRpcUrls,
    chainRpcTimeoutMs: vars.CHAIN_RPC_TIMEOUT_MS,
    supabase: {
      url: supabaseUrl,
      anonKey: vars.SUPABASE_ANON_KEY ?? null,
      serviceRoleKey: vars.SUPABASE_SERVICE_ROLE_KEY ?? null,
    },
    publicApiKeys: [
      ...(vars.SUPABASE_ANON_KEY === undefined ? [] : [vars.SUPABASE_ANON_KEY]),
      ...publishableKeys,
    ],
  };
}

/**
 * Supabase's transaction poolers: Supavisor on port 6543, or any URL marked `?pgbouncer=true`
 * (the convention Prisma and Supabase's docs use for PgBouncer).
 */
export function isPoolerUrl(url: string): boolean {
  try {
    const parsed = new URL(url);
    return parsed.port === "6543" || parsed.searchParams.get("pgbouncer") === "true";
  } catch {
    return false;
  }
}

/** The driver would send `pgbouncer=true` to the server as a startup parameter; it is only a hint. */
function withoutPoolerHint(url: string): string {
  const parsed = new URL(url);
  if (!parsed.searchParams.has("pgbouncer")) return url;
  parsed.searchParams.delete("pgbouncer");
  return parsed.toString();
}

/**
 * SUPABASE_PUBLISHABLE_KEYS as Supabase provides it: a JSON object of named keys
 * (`{"default":"sb_publishable_…"}`). A bare key is accepted too.
 */
function parsePublishableKeys(value: string | undefined, problems: string[]): string[] {
  if (value === undefined) return [];
  if (!value.startsWith("{")) return [value];
  try {
    const keys = Object.values(JSON.parse(value) as Record<string, unknown>);
    if (keys.every((key): key is string => typeof key === "string" && key.length > 0)) return keys;
  } catch {
    // reported below
  }
  problems.push("SUPABASE_PUBLISHABLE_KEYS must be a JSON object of named keys");
  return [];
}

/** One line naming every required production setting that is absent (not: malformed). */
function missingInProduction(env: Env): string[] {
  const given = (...names: string[]) => names.some((name) => Boolean(env[name]?.trim()));
  const present = [
    given("DATABASE_URL", "SUPABASE_DB_URL"),
    given("ENCRYPTION_KEYS", "ENCRYPTION_KEY"),
    given("SERVER_REVEAL_TOKEN"),
    given("JWT_SECRET"),
    given("ALLOWED_ORIGINS"),
  ];
  const missing = REQUIRED_IN_PRODUCTION.filter((_, index) => !present[index]);
  return missing.length === 0 ? [] : [`APP_ENV=production requires ${missing.join(", ")}`];
}

/** `ENCRYPTION_KEYS=k2:<base64>,k1:<base64>` (first encrypts) or one `ENCRYPTION_KEY=<base64>` (id k1). */
function parseKeyring(
  keyring: string | undefined,
  single: string | undefined,
  problems: string[],
  production: boolean,
): EncryptionKeySpec[] {
  if (keyring !== undefined && single !== undefined) {
    problems.push("set ENCRYPTION_KEYS or ENCRYPTION_KEY, not both");
    return [];
  }
  const entries = keyring !== undefined
    ? keyring.split(",").map((entry, index) => {
      const separator = entry.indexOf(":");
      return separator < 0
        ? { id: "", encoded: entry, label: `ENCRYPTION_KEYS entry ${index + 1}` }
        : {
          id: entry.slice(0, separator).trim(),
          encoded: entry.slice(separator + 1).trim(),
          label: `ENCRYPTION_KEYS entry ${index + 1}`,
        };
    })
    : single !== undefined
    ? [{ id: SINGLE_KEY_ID, encoded: single, label: "ENCRYPTION_KEY" }]
    : [];
  const keys: EncryptionKeySpec[] = [];
  for (const { id, encoded, label } of entries) {
    // Never echo the value: the message names the entry, not its content.
    if (!KEY_ID.test(id)) {
      problems.push(`${label} needs an id like k2:<base64> (letters, digits, _ or -)`);
      continue;
    }
    const key = decodeBase64(encoded);
    if (key === null || key.length !== 32) {
      problems.push(`${label} must be 32 bytes encoded as base64`);
      continue;
    }
    if (keys.some((k) => k.id === id)) {
      problems.push(`${label} repeats the key id ${id}`);
      continue;
    }
    if (production) problems.push(...weakKey(key, label));
    keys.push({ id, key });
  }
  return keys;
}

/**
 * Production refuses keys that are not 32 random bytes. Thresholds a random key misses by far:
 * fewer than 16 distinct bytes (all zeros, one byte repeated, a short pattern) has a chance near
 * 1e-17, and 32 printable ASCII bytes (a password encoded as base64) near 1e-14.
 */
function weakKey(key: Uint8Array, label: string): string[] {
  if (DEV_KEY_MARK_BYTES.every((byte, i) => key[i] === byte)) {
    return [`${label} is a development key made by the local server; generate one for production`];
  }
  if (new Set(key).size < 16) {
    return [`${label} is not random: too few distinct bytes (all zeros or a repeated pattern)`];
  }
  if (key.every((byte) => byte >= 0x20 && byte <= 0x7e)) {
    return [`${label} is not random: every byte is printable text (a password in base64?)`];
  }
  return [];
}

/** Production refuses development secrets, uniform ones, and one secret used for both roles. */
function weakSecrets(revealToken: string | undefined, jwtSecret: string | undefined): string[] {
  const problems: string[] = [];
  for (const [name, value] of [["SERVER_REVEAL_TOKEN", revealToken], ["JWT_SECRET", jwtSecret]]) {
    if (value === undefined) continue;
    if (value.startsWith(DEV_SECRET_PREFIX)) {
      problems.push(
        `${name} is a development secret made by the local server; generate one for production`,
      );
    } else if (new Set(value).size < 6) {
      problems.push(`${name} is not random: fewer than 6 distinct characters`);
    }
  }
  // Whoever holds the reveal token could otherwise sign session tokens for anyone, then reveal.
  if (revealToken !== undefined && revealToken === jwtSecret) {
    problems.push("SERVER_REVEAL_TOKEN must differ from JWT_SECRET");
  }
  return problems;
}

function decodeBase64(encoded: string): Uint8Array | null {
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(encoded)) return null;
  try {
    const normalised = encoded.replaceAll("-", "+").replaceAll("_", "/");
    return Uint8Array.from(atob(normalised), (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

function parseOrigins(list: string | undefined, problems: string[]): string[] {
  if (list === undefined) return [];
  return list.split(",").map((o) => o.trim()).filter(Boolean)
    .map((origin) => parseOrigin(origin, "ALLOWED_ORIGINS", problems))
    .filter((origin): origin is string => origin !== null);
}

function parseOrigin(value: string, name: string, problems: string[]): string | null {
  try {
    const url = new URL(value);
    if (url.protocol !== "https:" && url.protocol !== "http:") throw new TypeError();
    return url.origin;
  } catch {
    problems.push(`${name} must hold http(s) origins like https://app.example.com`);
    return null;
  }
}

function parseChainIds(list: string | undefined, problems: string[]): number[] | null {
  if (list === undefined || list === "*") return null;
  const ids = list.split(",").map((id) => Number(id.trim()));
  if (ids.some((id) => !Number.isSafeInteger(id) || id < 1)) {
    problems.push("ALLOWED_CHAIN_IDS must be positive integers separated by commas, or *");
    return null;
  }
  return ids;
}

/**
 * `CHAIN_RPC_URLS=1=https://…,8453=https://…`: a comma starts a new entry only before `<digits>=`,
 * so a comma inside a URL stays in it. Problems name the entry, never the URL (it may hold a key).
 * Production wants https: an RPC answer decides whether a contract wallet's signature is valid.
 */
function parseChainRpcUrls(
  list: string | undefined,
  production: boolean,
  problems: string[],
): Map<number, string> {
  const urls = new Map<number, string>();
  if (list === undefined) return urls;
  for (const [index, entry] of list.split(/,\s*(?=\d+\s*=)/).entries()) {
    const label = `CHAIN_RPC_URLS entry ${index + 1}`;
    const match = /^\s*(\d{1,16})\s*=\s*(\S+)\s*$/.exec(entry);
    const chainId = match === null ? NaN : Number(match[1]);
    if (match === null || !Number.isSafeInteger(chainId) || chainId < 1) {
      problems.push(`${label} must be <chainId>=<http(s) URL>`);
      continue;
    }
    let url: URL | null = null;
    try {
      url = new URL(match[2]);
    } catch {
      // reported below
    }
    const schemes = production ? ["https:"] : ["https:", "http:"];
    if (url === null || !schemes.includes(url.protocol)) {
      problems.push(
        `${label} (chain ${chainId}) must be an ${production ? "https" : "http(s)"} URL`,
      );
      continue;
    }
    if (urls.has(chainId)) {
      problems.push(`${label} repeats chain ${chainId}`);
      continue;
    }
    urls.set(chainId, url.href);
  }
  return urls;
}
