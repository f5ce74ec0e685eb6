/**
 * Every rate limit, once: the variable that sets it, its default and window, and the buckets it
 * counts in, each with what it counts. env-schema.ts reads its defaults and bounds from here,
 * config.ts its `rateLimits`, and each route and store its buckets; the SQL functions are handed a
 * bucket (or its prefix, to which they append the creator or wallet they act on) and name none
 * themselves. docs/operations.md's table of rate limits is held equal to this one, and a bucket
 * named anywhere else fails tests/rate_limits_table_test.ts.
 *
 * A bucket's name is the counter's key in public.rate_limit_windows: renaming one starts its
 * counts afresh on deploy, so a name, once live, stays.
 */

/** What every limit's variable may be set to, per window. */
export const RATE_LIMIT_RANGE = { min: 1, max: 1_000_000 } as const;

/** Every limit counts per minute, as its variable's name says. */
const MINUTE = 60;

/** One counter: its name's fixed start, what follows it, and what it counts. */
export interface Bucket {
  readonly prefix: string;
  /** What follows the prefix, as docs show it: `{client}` is the client address (rate-limit.ts). */
  readonly key: string;
  readonly counts: string;
}

/** One configurable limit and the buckets it holds to it, each a budget of its own. */
export interface RateLimitRow {
  readonly variable: `RATE_LIMIT_${string}`;
  readonly default: number;
  readonly windowSeconds: number;
  readonly buckets: Readonly<Record<string, Bucket>>;
}

export const RATE_LIMITS = {
  noncePerIpPerMinute: {
    variable: "RATE_LIMIT_NONCE_PER_MINUTE",
    default: 60,
    windowSeconds: MINUTE,
    buckets: {
      client: {
        prefix: "nonce:ip:",
        key: "{client}",
        counts: "Nonces per client IP, sign-in's and a sensitive act's together.",
      },
    },
  },
  proofPerIpPerMinute: {
    variable: "RATE_LIMIT_PROOF_PER_MINUTE",
    default: 30,
    windowSeconds: MINUTE,
    buckets: {
      client: {
        prefix: "proof:ip:",
        key: "{client}",
        counts: "Sign-in attempts and a sensitive act's signatures per client IP, valid or not.",
      },
    },
  },
  proofPerAddressPerMinute: {
    variable: "RATE_LIMIT_PROOF_PER_ADDRESS_PER_MINUTE",
    default: 10,
    windowSeconds: MINUTE,
    buckets: {
      wallet: {
        prefix: "proof:address:",
        key: "{eoa or chain}:{address}",
        counts: "Verified sign-ins per wallet: a key's on every chain together, a contract " +
          "wallet's on its own chain.",
      },
      creator: {
        prefix: "confirm:user:",
        key: "{creator}",
        counts: "Sensitive acts (unlock, sign sessions out, delete the account) per creator, " +
          "each with a fresh signature.",
      },
    },
  },
  refreshPerIpPerMinute: {
    variable: "RATE_LIMIT_REFRESH_PER_MINUTE",
    default: 60,
    windowSeconds: MINUTE,
    buckets: {
      client: {
        prefix: "refresh:ip:",
        key: "{client}",
        counts: "Refresh attempts per client IP, valid or not (a 429 spends no token).",
      },
    },
  },
  vaultWritesPerMinute: {
    variable: "RATE_LIMIT_VAULT_WRITES_PER_MINUTE",
    default: 60,
    windowSeconds: MINUTE,
    buckets: {
      write: {
        prefix: "vault:write:",
        key: "{creator}",
        counts: "Vault saves and deletes (PUT and DELETE together) per creator.",
      },
      // Its own bucket: writes from a stolen session must not keep the owner from locking.
      lock: {
        prefix: "vault:lock:",
        key: "{creator}",
        counts: "Locks of live-run access per creator, apart from the writes.",
      },
      export: {
        prefix: "vault:export:",
        key: "{creator}",
        counts: "Account exports per creator.",
      },
    },
  },
  revealsPerMinute: {
    variable: "RATE_LIMIT_REVEALS_PER_MINUTE",
    default: 60,
    windowSeconds: MINUTE,
    buckets: {
      creator: {
        prefix: "vault:reveal:user:",
        key: "{creator}",
        counts: "Reveals per creator.",
      },
    },
  },
  revealsPerTokenPerMinute: {
    variable: "RATE_LIMIT_REVEALS_PER_TOKEN_PER_MINUTE",
    default: 6000,
    windowSeconds: MINUTE,
    buckets: {
      credential: {
        prefix: "vault:reveal:token:",
        key: "{credential}",
        counts: "Reveals per live-run credential, every creator together: a leaked credential " +
          "used for mass reveal gets 429 past it, and each refusal is logged as " +
          "`reveal_credential_over_limit` with the credential's name.",
      },
    },
  },
  wrongRevealTokensPerIpPerMinute: {
    variable: "RATE_LIMIT_WRONG_REVEAL_TOKENS_PER_MINUTE",
    default: 10,
    windowSeconds: MINUTE,
    buckets: {
      client: {
        prefix: "vault:reveal:wrong-token:ip:",
        key: "{client}",
        counts: "Reveals refused for a missing or wrong server token per client IP; a right " +
          "token never counts.",
      },
      creator: {
        prefix: "vault:reveal:refused:user:",
        key: "{creator}",
        counts: "Those refusals recorded in a creator's activity, per creator: past one over " +
          "the limit they are counted, not recorded.",
      },
    },
  },
  rpcPerIpPerMinute: {
    variable: "RATE_LIMIT_RPC_PER_MINUTE",
    default: 10,
    windowSeconds: MINUTE,
    buckets: {
      client: {
        prefix: "rpc:ip:",
        key: "{client}",
        counts: "Contract-wallet checks (RPC calls) per client IP.",
      },
    },
  },
  rpcPerAddressPerMinute: {
    variable: "RATE_LIMIT_RPC_PER_ADDRESS_PER_MINUTE",
    default: 100,
    windowSeconds: MINUTE,
    buckets: {
      wallet: {
        prefix: "rpc:address:",
        key: "{chain}:{address}",
        counts: "Contract-wallet checks per wallet address and chain, every client together: " +
          "the cap over the per-client budgets, at least 10 times " +
          "`RATE_LIMIT_RPC_PER_ADDRESS_PER_CLIENT_PER_MINUTE` or refused at start.",
      },
    },
  },
  rpcPerAddressPerClientPerMinute: {
    variable: "RATE_LIMIT_RPC_PER_ADDRESS_PER_CLIENT_PER_MINUTE",
    default: 5,
    windowSeconds: MINUTE,
    buckets: {
      walletClient: {
        prefix: "rpc:address-ip:",
        key: "{chain}:{address}:{client}",
        counts: "Contract-wallet checks per wallet address and chain per client IP: one " +
          "client's share of a wallet, so one client cannot use the wallet's cap up.",
      },
    },
  },
} as const satisfies Record<string, RateLimitRow>;

export type RateLimitName = keyof typeof RATE_LIMITS;

export type RateLimitVariable = typeof RATE_LIMITS[RateLimitName]["variable"];

/** The limits as configured: each one's number per window. */
export type RateLimits = { readonly [Name in RateLimitName]: number };

/** One bucket's count against its limit: what a route or store hands the database. */
export interface Budget {
  readonly bucket: string;
  readonly limit: number;
  readonly windowSeconds: number;
}

/** The budget `key` counts in: `bucket`'s prefix then the key, under `name`'s configured limit. */
export function budget<Name extends RateLimitName>(
  limits: RateLimits,
  name: Name,
  bucket: keyof typeof RATE_LIMITS[Name]["buckets"],
  key: string,
): Budget {
  const { prefix } = bucketOf(name, bucket);
  return {
    bucket: prefix + key,
    limit: limits[name],
    windowSeconds: RATE_LIMITS[name].windowSeconds,
  };
}

/** A bucket's prefix and its limit, for a database function that completes the bucket's name. */
export interface PrefixBudget {
  readonly prefix: string;
  readonly limit: number;
  readonly windowSeconds: number;
}

/**
 * A bucket's prefix under `name`'s limit, for a database function that appends the creator or
 * wallet it acts on itself (so a count always names whom the function acted for).
 */
export function prefixBudget<Name extends RateLimitName>(
  limits: RateLimits,
  name: Name,
  bucket: keyof typeof RATE_LIMITS[Name]["buckets"],
): PrefixBudget {
  const { prefix } = bucketOf(name, bucket);
  return { prefix, limit: limits[name], windowSeconds: RATE_LIMITS[name].windowSeconds };
}

function bucketOf<Name extends RateLimitName>(
  name: Name,
  bucket: keyof typeof RATE_LIMITS[Name]["buckets"],
): Bucket {
  return (RATE_LIMITS[name].buckets as Readonly<Record<PropertyKey, Bucket>>)[bucket];
}
