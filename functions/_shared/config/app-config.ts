/**
 * The service's settings as one checked object (config.ts reads it from the environment): what
 * every function, route and the local server are given.
 */
import type { DatabaseSettings } from "../db/db.ts";
import type { EncryptionKeySpec } from "./encryption-keys.ts";
import type { SessionKeys } from "../auth/session-keys.ts";
import type { RateLimits } from "./limits.ts";

export type AppEnv = "development" | "test" | "production";

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

export interface AppConfig {
  readonly appEnv: AppEnv;
  readonly port: number;
  readonly projectName: string;
  readonly database: DatabaseSettings;
  /** First key encrypts; every key decrypts (rotation). */
  readonly encryptionKeys: readonly EncryptionKeySpec[];
  /**
   * The deprecated single reveal token (SERVER_REVEAL_TOKEN): while set, accepted as the live-run
   * credential named `legacy` with every type; empty when unset (then nothing matches it).
   */
  readonly serverRevealToken: string;
  /** JWT_SECRET when set: the legacy HS256 secret, and the refresh retries' key (refresh-tokens.ts). */
  readonly jwtSecret: string | null;
  /** The keys that sign and verify sessions, and the issuer (session-keys.ts). */
  readonly sessionKeys: SessionKeys;
  /** Origins whose EIP-4361 `domain`/`uri` are accepted and that CORS lets in. Empty: own origin only. */
  readonly allowedOrigins: readonly string[];
  /** null: any chain. */
  readonly allowedChainIds: readonly number[] | null;
  readonly nonceTtlSeconds: number;
  readonly accessTokenTtlSeconds: number;
  readonly refreshTokenTtlSeconds: number;
  /** Each limit of limits.ts's table, per its window. */
  readonly rateLimits: RateLimits;
  /** Days an audit event is kept (AUDIT_RETENTION_DAYS); null: forever. */
  readonly auditRetentionDays: number | null;
  readonly clientIp: ClientIpSource;
  /**
   * CHAIN_RPC_URLS: the JSON-RPC endpoint per chain id that contract-wallet signatures (ERC-1271,
   * ERC-6492) are checked on. A URL may carry an API key: it is never logged or answered.
   */
  readonly chainRpcUrls: ReadonlyMap<number, string>;
  /** The deadline for one contract-wallet check, every RPC call in it included. */
  readonly chainRpcTimeoutMs: number;
  readonly supabase: {
    readonly anonKey: string | null;
  };
  /**
   * The project's public keys (SUPABASE_ANON_KEY and every SUPABASE_PUBLISHABLE_KEYS value).
   * supabase-js sends one as the bearer when the app has no session: that means "no session".
   */
  readonly publicApiKeys: readonly string[];
}
