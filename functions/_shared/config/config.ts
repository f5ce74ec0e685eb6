/**
 * Configuration: the environment (env-schema.ts) read into one checked AppConfig. Every function
 * and the local server read their settings through `parseConfig`; a function gets its environment
 * from processEnv() (env-schema.ts), the local server and the operator commands from
 * server/local-settings.ts, and nothing else reads `Deno.env`.
 */
import type { DatabaseSettings } from "../db/db.ts";
import type { AppConfig, AppEnv } from "./app-config.ts";
import { databaseUrl, type Env, type EnvVars, FORWARDED_FOR, readEnvVars } from "./env-schema.ts";
import {
  encryptionKeySecret,
  type EncryptionKeySpec,
  parseEncryptionKeys,
} from "./encryption-keys.ts";
import { type ComparedSecret, comparedSecret, sharedSecrets, weakSecret } from "./weak-secrets.ts";
import { localStackProblems } from "./local-stack.ts";
import { RATE_LIMITS, type RateLimitName, type RateLimits } from "./limits.ts";
import { isLoopbackHostname } from "../../../protocol/loopback.ts";
import {
  DEV_KID_PREFIX,
  LEGACY_ISSUER,
  parseSigningKeys,
  type SessionKeys,
} from "../auth/session-keys.ts";
import { isLiveRunCredential } from "../auth/live-run-credential-format.ts";
import {
  parseChainIds,
  parseChainRpcUrls,
  parseDatabaseUrl,
  parseOrigin,
  parseOrigins,
  parsePublishableKeys,
  preparesStatements,
} from "./parse.ts";

/** Defaults that differ between a deployed function and the local server. */
export interface ConfigDefaults {
  /**
   * Connections per process. A function isolate is short-lived and there are many of them, each
   * with its own pool behind one shared pooler, so functions keep theirs small.
   */
  readonly maxConnections: number;
  /**
   * APP_ENV when it is unset. A deployed function runs in production unless told otherwise, so a
   * project that forgets the variable gets production's checks (fail closed), not development's.
   */
  readonly appEnv: AppEnv;
}

export const LOCAL_SERVER_DEFAULTS: ConfigDefaults = { maxConnections: 10, appEnv: "development" };
export const FUNCTION_DEFAULTS: ConfigDefaults = { maxConnections: 3, appEnv: "production" };

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`Configuration refused: ${problems.join("; ")}`);
    this.name = "ConfigError";
  }
}

/**
 * How many clients' full shares a contract wallet's RPC cap must hold at least, so that using it up
 * takes many client addresses, not a handful (one holder of an IPv6 /48 still has them: each /64
 * is a client; docs/contract-wallets.md says why that is accepted).
 */
export const CLIENTS_TO_FILL_A_WALLET_CAP = 10;

/** Settings production refuses to start without (fail closed). */
export const REQUIRED_IN_PRODUCTION = [
  "DATABASE_URL (or SUPABASE_DB_URL)",
  "ENCRYPTION_KEYS (or ENCRYPTION_KEY)",
  "JWT_SIGNING_KEYS (or JWT_LEGACY_HS256=sign with JWT_SECRET)",
  "ALLOWED_ORIGINS",
] as const;

/**
 * Validates the environment. Throws ConfigError naming every problem at once: malformed values
 * in any mode, and in production every missing required setting.
 */
export function parseConfig(
  given: Env,
  defaults: ConfigDefaults = LOCAL_SERVER_DEFAULTS,
): AppConfig {
  const { env, vars } = readEnv(given, defaults, REQUIRED_IN_PRODUCTION);
  const problems: string[] = [];
  const production = vars.APP_ENV === "production";
  const { database, keys } = storageSettings(vars, defaults, problems);
  const encryptionKeys = keys.map(({ id, key }): EncryptionKeySpec => ({ id, key }));
  const allowedOrigins = parseOrigins(vars.ALLOWED_ORIGINS, problems);
  const allowedChainIds = parseChainIds(vars.ALLOWED_CHAIN_IDS, problems);
  const publishableKeys = parsePublishableKeys(vars.SUPABASE_PUBLISHABLE_KEYS, problems);
  if (vars.CLIENT_IP_HEADER !== FORWARDED_FOR && (vars.CLIENT_IP_TRUSTED_HOPS ?? 1) !== 1) {
    // A single-address header has no hops to count; a count here means a misread setup.
    problems.push("CLIENT_IP_TRUSTED_HOPS applies only to CLIENT_IP_HEADER=x-forwarded-for");
  }
  if (
    vars.RATE_LIMIT_RPC_PER_ADDRESS_PER_MINUTE <
      CLIENTS_TO_FILL_A_WALLET_CAP * vars.RATE_LIMIT_RPC_PER_ADDRESS_PER_CLIENT_PER_MINUTE
  ) {
    problems.push(
      `RATE_LIMIT_RPC_PER_ADDRESS_PER_MINUTE must be at least ${CLIENTS_TO_FILL_A_WALLET_CAP} times ` +
        "RATE_LIMIT_RPC_PER_ADDRESS_PER_CLIENT_PER_MINUTE (a handful of clients would use a " +
        "wallet's whole cap and lock its owner out)",
    );
  }
  const chainRpcUrls = parseChainRpcUrls(vars.CHAIN_RPC_URLS, production, problems);
  const supabaseUrl = vars.SUPABASE_URL === undefined
    ? null
    : parseOrigin(vars.SUPABASE_URL, "SUPABASE_URL", problems);
  const sessionKeys = sessionKeySettings(vars, supabaseUrl, problems);

  if (production) {
    problems.unshift(...missingInProduction(env, REQUIRED_IN_PRODUCTION));
    problems.push(
      ...serviceSecretProblems(
        vars,
        keys.map(encryptionKeySecret),
        publicKeys(vars, publishableKeys),
      ),
    );
    if (vars.SERVER_REVEAL_TOKEN !== undefined && isLiveRunCredential(vars.SERVER_REVEAL_TOKEN)) {
      // As the legacy token it would reveal every type, whatever scope its row was given (and
      // the local server's development credential would work here).
      problems.push(
        "SERVER_REVEAL_TOKEN holds a live-run credential: credentials are rows in the database " +
          "(deno task credentials:add), each with its own scope",
      );
    }
    if (
      vars.ALLOWED_ORIGINS !== undefined && vars.ALLOWED_ORIGINS.split(",").every((o) => !o.trim())
    ) {
      problems.push("ALLOWED_ORIGINS names no origin (CORS would answer any origin)");
    }
    if (allowedOrigins.some((origin) => !origin.startsWith("https://"))) {
      // A page served over http can be read and rewritten on the way: its sign-in and its session
      // token are the network's, so production lets in https pages only.
      problems.push("ALLOWED_ORIGINS must hold https origins in production (no http://)");
    }
    if (allowedOrigins.some((origin) => isLoopbackHostname(new URL(origin).hostname))) {
      // Whatever listens on that port of a creator's machine would be let in, over https as over
      // http (a local program can trust its own certificate); no production page is served there.
      problems.push(
        "ALLOWED_ORIGINS must name no loopback origin in production (localhost, 127.0.0.0/8, " +
          "[::1]), https ones included",
      );
    }
  } else {
    problems.push(...localStackProblems(vars.APP_ENV, vars));
    // Development and tests get their keys from the local server's dev-key file or the test setup.
    if (encryptionKeys.length === 0) problems.push(NO_KEYRING);
    if (vars.JWT_SIGNING_KEYS === undefined && vars.JWT_LEGACY_HS256 !== "sign") {
      problems.push("JWT_SIGNING_KEYS is not set");
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);

  return {
    appEnv: vars.APP_ENV,
    port: vars.PORT,
    projectName: vars.PROJECT_NAME ??
      (supabaseUrl ? new URL(supabaseUrl).hostname.split(".")[0] : "wallet-vault-local"),
    database,
    encryptionKeys,
    // Live-run credentials are rows (scripts/credentials.ts); this deprecated token is optional.
    serverRevealToken: vars.SERVER_REVEAL_TOKEN ?? "",
    jwtSecret: vars.JWT_SECRET ?? null,
    sessionKeys: sessionKeys!,
    allowedOrigins,
    allowedChainIds,
    nonceTtlSeconds: vars.NONCE_TTL_SECONDS,
    accessTokenTtlSeconds: vars.ACCESS_TOKEN_TTL_SECONDS,
    refreshTokenTtlSeconds: vars.REFRESH_TOKEN_TTL_SECONDS,
    rateLimits: rateLimitsOf(vars),
    auditRetentionDays: vars.AUDIT_RETENTION_DAYS,
    clientIp: { header: vars.CLIENT_IP_HEADER, trustedHops: vars.CLIENT_IP_TRUSTED_HOPS ?? 1 },
    chainRpcUrls,
    chainRpcTimeoutMs: vars.CHAIN_RPC_TIMEOUT_MS,
    supabase: { anonKey: vars.SUPABASE_ANON_KEY ?? null },
    publicApiKeys: [
      ...(vars.SUPABASE_ANON_KEY === undefined ? [] : [vars.SUPABASE_ANON_KEY]),
      ...publishableKeys,
    ],
  };
}

/** Each limit of limits.ts's table as its variable sets it. */
function rateLimitsOf(vars: EnvVars): RateLimits {
  const names = Object.keys(RATE_LIMITS) as RateLimitName[];
  return Object.fromEntries(
    names.map((name) => [name, vars[RATE_LIMITS[name].variable]]),
  ) as Record<RateLimitName, number>;
}

/** What re-encrypting the vault needs (vault:rotate): none of the service's own secrets. */
export type StorageConfig = Pick<AppConfig, "appEnv" | "database" | "encryptionKeys">;

/** What production requires of an operator command: the database and the encryption keys. */
const REQUIRED_FOR_STORAGE: readonly Requirement[] = [
  "DATABASE_URL (or SUPABASE_DB_URL)",
  "ENCRYPTION_KEYS (or ENCRYPTION_KEY)",
];

/**
 * The database and the encryption keys alone, for an operator command that neither signs sessions nor
 * answers requests: SERVER_REVEAL_TOKEN, the session keys and ALLOWED_ORIGINS are not asked for. In
 * production, as for the service, the database is a Postgres URL (never a local PGlite).
 */
export function parseStorageConfig(given: Env): StorageConfig {
  const { env, vars } = readEnv(given, LOCAL_SERVER_DEFAULTS, REQUIRED_FOR_STORAGE);
  const problems: string[] = [];
  const { database, keys } = storageSettings(vars, LOCAL_SERVER_DEFAULTS, problems);
  if (vars.APP_ENV === "production") {
    problems.unshift(...missingInProduction(env, REQUIRED_FOR_STORAGE));
  } else if (keys.length === 0) {
    problems.push(NO_KEYRING);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    appEnv: vars.APP_ENV,
    database,
    encryptionKeys: keys.map(({ id, key }): EncryptionKeySpec => ({ id, key })),
  };
}

const NO_KEYRING = "ENCRYPTION_KEYS (or ENCRYPTION_KEY) is not set";

/**
 * The environment read as env-schema.ts's table says, with APP_ENV's default for this reader.
 * Malformed values are refused together with, in production, whichever of `required` are missing.
 */
function readEnv(
  given: Env,
  defaults: ConfigDefaults,
  required: readonly Requirement[],
): { env: Env; vars: EnvVars } {
  const env = given.APP_ENV?.trim() ? given : { ...given, APP_ENV: defaults.appEnv };
  const read = readEnvVars(env);
  if (read.problems === undefined) return { env, vars: read.vars };
  throw new ConfigError(
    env.APP_ENV === "production"
      ? [...missingInProduction(env, required), ...read.problems]
      : read.problems,
  );
}

/**
 * The service's own secrets as production compares them: the reveal token (each variable that holds
 * one; issue 42's stored credentials are hashed in the database, not configured here) and the JWT
 * secret.
 */
const SERVICE_SECRETS = ["SERVER_REVEAL_TOKEN", "JWT_SECRET"] as const;

/**
 * Production's refusals of the service's secrets (weak-secrets.ts): each one's own weakness, then
 * any one a copy of another, of an encryption key, or of a public key, as written, re-encoded or
 * reversed. Whoever holds the reveal token could otherwise sign session tokens for anyone, then
 * reveal; and a public key is in every frontend's bundle.
 */
function serviceSecretProblems(
  vars: EnvVars,
  keys: readonly ComparedSecret[],
  publicKeys: readonly ComparedSecret[],
): string[] {
  const secrets = SERVICE_SECRETS.flatMap((name) => {
    const value = vars[name];
    return value === undefined ? [] : [[name, value] as const];
  });
  const compared = secrets.map(([name, value]) => comparedSecret(name, value));
  return [
    ...secrets.flatMap(([name, value]) => weakSecret(value, name)),
    ...sharedSecrets(compared, [...keys, ...publicKeys]),
  ];
}

/** SUPABASE_ANON_KEY and every SUPABASE_PUBLISHABLE_KEYS entry, named for a refusal. */
function publicKeys(vars: EnvVars, publishable: readonly string[]): ComparedSecret[] {
  return [
    ...(vars.SUPABASE_ANON_KEY === undefined
      ? []
      : [comparedSecret("SUPABASE_ANON_KEY (a public key)", vars.SUPABASE_ANON_KEY)]),
    ...publishable.map((key, i) =>
      comparedSecret(`SUPABASE_PUBLISHABLE_KEYS entry ${i + 1} (a public key)`, key)
    ),
  ];
}

/** The database (Postgres from its URL, else PGlite) and the encryption keys; problems appended. */
function storageSettings(vars: EnvVars, defaults: ConfigDefaults, problems: string[]) {
  const given = databaseUrl(vars);
  const target = given === undefined
    ? undefined
    : parseDatabaseUrl(given.url, given.name, problems);
  const keys = parseEncryptionKeys(
    vars.ENCRYPTION_KEYS,
    vars.ENCRYPTION_KEY,
    problems,
    vars.APP_ENV === "production",
  );
  // A URL that does not parse is a problem above, which stops the caller: its settings (empty,
  // never the value given) are not used.
  const database: DatabaseSettings = target !== undefined
    ? {
      engine: "postgres",
      url: target?.url ?? "",
      maxConnections: vars.DATABASE_MAX_CONNECTIONS ?? defaults.maxConnections,
      prepare: target !== null && preparesStatements(target, vars.DATABASE_PREPARE),
      queryTimeoutMs: vars.DATABASE_TIMEOUT_MS,
    }
    : { engine: "pglite", dataDir: vars.PGLITE_DATA_DIR ?? ".local/pglite" };
  return { database, keys };
}

/**
 * The session keys: JWT_SIGNING_KEYS (the first signs), or HS256 under JWT_SECRET chosen with
 * JWT_LEGACY_HS256=sign; "verify" signs with the keys while HS256 tokens still verify (the
 * migration). Problems are appended; null when none can sign (a problem then says why).
 */
function sessionKeySettings(
  vars: EnvVars,
  supabaseUrl: string | null,
  problems: string[],
): SessionKeys | null {
  const legacy = vars.JWT_LEGACY_HS256;
  const keys = vars.JWT_SIGNING_KEYS === undefined
    ? undefined
    : parseSigningKeys(vars.JWT_SIGNING_KEYS, problems);
  if (legacy !== undefined && vars.JWT_SECRET === undefined) {
    problems.push(`JWT_LEGACY_HS256=${legacy} needs JWT_SECRET`);
    return null;
  }
  if (legacy === "verify" && vars.JWT_SIGNING_KEYS === undefined) {
    problems.push("JWT_LEGACY_HS256=verify (migrating to signing keys) needs JWT_SIGNING_KEYS");
  }
  if (vars.APP_ENV === "production") {
    for (const key of keys?.published ?? []) {
      if (key.kid.toLowerCase().startsWith(DEV_KID_PREFIX)) {
        problems.push(
          `JWT_SIGNING_KEYS holds the local server's development key ${key.kid} (generate one ` +
            "with supabase gen signing-key)",
        );
      }
    }
  }
  const issuer = vars.JWT_ISSUER ??
    (supabaseUrl === null ? LEGACY_ISSUER : `${supabaseUrl}/auth/v1`);
  const legacySecret = legacy === undefined ? null : vars.JWT_SECRET!;
  if (legacy === "sign") {
    return {
      issuer,
      signing: { alg: "HS256", secret: vars.JWT_SECRET! },
      published: keys?.published ?? [],
      legacySecret,
    };
  }
  if (keys === undefined || keys === null) return null;
  return { issuer, signing: keys.signing, published: keys.published, legacySecret };
}

type Requirement = typeof REQUIRED_IN_PRODUCTION[number];

/** One line naming each of `required` that is absent (not: malformed). */
function missingInProduction(env: Env, required: readonly Requirement[]): string[] {
  const given = (...names: string[]) => names.some((name) => Boolean(env[name]?.trim()));
  const present: Record<Requirement, boolean> = {
    "DATABASE_URL (or SUPABASE_DB_URL)": databaseUrl(env) !== undefined,
    "ENCRYPTION_KEYS (or ENCRYPTION_KEY)": given("ENCRYPTION_KEYS", "ENCRYPTION_KEY"),
    "JWT_SIGNING_KEYS (or JWT_LEGACY_HS256=sign with JWT_SECRET)": given("JWT_SIGNING_KEYS") ||
      (env.JWT_LEGACY_HS256?.trim().toLowerCase() === "sign" && given("JWT_SECRET")),
    ALLOWED_ORIGINS: given("ALLOWED_ORIGINS"),
  };
  const missing = required.filter((requirement) => !present[requirement]);
  return missing.length === 0 ? [] : [`APP_ENV=production requires ${missing.join(", ")}`];
}
