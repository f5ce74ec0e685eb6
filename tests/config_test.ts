/**
 * Configuration: development fills gaps with generated keys, production fails closed, malformed
 * values are refused in every mode, and Supabase's own variables are understood.
 */
import assert from "node:assert/strict";
import {
  ConfigError,
  FUNCTION_DEFAULTS,
  parseConfig,
  parseStorageConfig,
} from "../functions/_shared/config/config.ts";
import type { AppConfig } from "../functions/_shared/config/app-config.ts";
import { ENV_VARS, readEnvVars } from "../functions/_shared/config/env-schema.ts";
import { preparesStatements } from "../functions/_shared/config/parse.ts";
import {
  DEV_ENCRYPTION_KEY_MARK,
  DEV_SECRET_PREFIX,
} from "../functions/_shared/config/encryption-keys.ts";
import { DEV_KID_PREFIX } from "../functions/_shared/auth/session-keys.ts";
import { generateDevKeys, loadOrCreateDevKeys, withDevKeys } from "../server/dev-keys.ts";
import { isLiveRunCredential } from "../functions/_shared/auth/live-run-credential-format.ts";
import {
  base64,
  problemsOf,
  productionEnv,
  productionProblems,
  randomBase64,
  signingKey,
} from "./support/config-env.ts";

const KEY_A = btoa(String.fromCharCode(...new Uint8Array(32).fill(1)));
const KEY_B = btoa(String.fromCharCode(...new Uint8Array(32).fill(2)));
const TOKEN = "r".repeat(40);
const SECRET = "j".repeat(48);
const SIGNING_KEYS = JSON.stringify([signingKey()]);

// SERVER_REVEAL_TOKEN is the deprecated single token: optional (live-run credentials are rows).
const REQUIRED = ["DATABASE_URL", "ENCRYPTION_KEYS", "JWT_SIGNING_KEYS"];

Deno.test("production with nothing set names every missing variable in one line", () => {
  const [first] = problemsOf({ APP_ENV: "production" });
  for (const name of [...REQUIRED, "ALLOWED_ORIGINS"]) assert.match(first, new RegExp(name));
});

Deno.test("production starts when the five required settings are given", () => {
  const config = parseConfig(productionEnv());
  assert.equal(config.appEnv, "production");
  assert.equal(config.database.engine, "postgres");
  assert.deepEqual(config.encryptionKeys.map((k) => k.id), ["k1"]);
  assert.deepEqual(config.allowedOrigins, ["https://app.example.com"]);
});

Deno.test("production refuses an all-zero encryption key, naming the setting", () => {
  const problems = productionProblems({ ENCRYPTION_KEY: base64(new Uint8Array(32)) });
  assert.deepEqual(problems, [
    "ENCRYPTION_KEY is not random: too few distinct bytes (all zeros or a repeated pattern)",
  ]);
});

Deno.test("production refuses keys of one repeated byte or a short repeated pattern, in any keyring entry", () => {
  const pattern = base64(Uint8Array.from({ length: 32 }, (_, i) => (i % 8) * 37));
  const problems = productionProblems({
    ENCRYPTION_KEY: "",
    ENCRYPTION_KEYS: `k3:${randomBase64(32)},k2:${KEY_B},k1:${pattern}`,
  });
  assert.deepEqual(problems, [
    "ENCRYPTION_KEYS entry 2 is not random: too few distinct bytes (all zeros or a repeated pattern)",
    "ENCRYPTION_KEYS entry 3 is not random: too few distinct bytes (all zeros or a repeated pattern)",
  ]);
});

Deno.test("production refuses an encryption key that is printable text (a password in base64)", () => {
  const problems = productionProblems({ ENCRYPTION_KEY: btoa("correct horse battery staple 123") });
  assert.deepEqual(problems, [
    "ENCRYPTION_KEY is not random: every byte is printable text (a password in base64?)",
  ]);
});

Deno.test("production refuses SERVER_REVEAL_TOKEN equal to JWT_SECRET", () => {
  const shared = randomBase64(48);
  const problems = productionProblems({ SERVER_REVEAL_TOKEN: shared, JWT_SECRET: shared });
  assert.deepEqual(problems, ["SERVER_REVEAL_TOKEN must differ from JWT_SECRET"]);
});

Deno.test("production refuses secrets of a handful of repeated characters", () => {
  const problems = productionProblems({ SERVER_REVEAL_TOKEN: TOKEN, JWT_SECRET: "ab".repeat(24) });
  const fewer =
    "is not random: fewer than 16 distinct characters (generate it: openssl rand -base64 32)";
  assert.deepEqual(problems, [`SERVER_REVEAL_TOKEN ${fewer}`, `JWT_SECRET ${fewer}`]);
});

Deno.test("production refuses the local server's development keys, wherever they are copied", () => {
  const dev = generateDevKeys();
  assert.ok(dev.ENCRYPTION_KEY.startsWith(DEV_ENCRYPTION_KEY_MARK));
  const [devKey] = JSON.parse(dev.JWT_SIGNING_KEYS);
  assert.ok(devKey.kid.startsWith(DEV_KID_PREFIX));
  const made = "made by the local server; generate one for production";
  // The development credential is refused by its format: no live-run credential is a token.
  assert.deepEqual(productionProblems({ ...dev }), [
    `ENCRYPTION_KEY is a development key ${made}`,
    `JWT_SIGNING_KEYS holds the local server's development key ${devKey.kid} (generate one with ` +
    "supabase gen signing-key)",
    "SERVER_REVEAL_TOKEN holds a live-run credential: credentials are rows in the database " +
    "(deno task credentials:add), each with its own scope",
  ]);
  const shouted = { ...devKey, kid: devKey.kid.toUpperCase() };
  assert.ok(
    problemsOf(productionEnv({ JWT_SIGNING_KEYS: JSON.stringify([shouted]) })).some((p) =>
      p.startsWith("JWT_SIGNING_KEYS holds the local server's development key")
    ),
    "the mark is found in any case",
  );
  // Under another key id, behind a real key, in base64url: still the development key's bytes.
  const asUrl = dev.ENCRYPTION_KEY.replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
  assert.deepEqual(
    productionProblems({
      ENCRYPTION_KEY: "",
      ENCRYPTION_KEYS: `k2:${randomBase64(32)},k1:${asUrl}`,
    }),
    [`ENCRYPTION_KEYS entry 2 is a development key ${made}`],
  );
});

Deno.test("production refuses a missing or empty ALLOWED_ORIGINS (CORS would answer any origin)", () => {
  const { ALLOWED_ORIGINS: _, ...withoutOrigins } = productionEnv();
  assert.deepEqual(problemsOf(withoutOrigins), ["APP_ENV=production requires ALLOWED_ORIGINS"]);
  assert.deepEqual(productionProblems({ ALLOWED_ORIGINS: " , " }), [
    "ALLOWED_ORIGINS names no origin (CORS would answer any origin)",
  ]);
});

Deno.test("ALLOWED_ORIGINS holds exact origins: no wildcard, path, query or credentials", () => {
  const refused = "ALLOWED_ORIGINS must hold http(s) origins like https://app.example.com";
  for (
    const origin of [
      "https://*.example.com", // the URL parser takes it as a host; no page's origin equals it
      "*",
      "https://app.example.com/settings",
      "https://app.example.com?x=1",
      "https://user:pass@app.example.com",
      "ftp://app.example.com",
    ]
  ) {
    assert.deepEqual(productionProblems({ ALLOWED_ORIGINS: origin }), [refused], origin);
  }
  const accepted = parseConfig(productionEnv({
    ALLOWED_ORIGINS:
      "https://App.Example.com/, https://app.example.com:8443, https://[2001:db8::1]:3000",
  })).allowedOrigins;
  assert.deepEqual(accepted, [
    "https://app.example.com",
    "https://app.example.com:8443",
    "https://[2001:db8::1]:3000",
  ]);
  // Outside production, http pages too (a local frontend's dev server).
  const local = parseConfig({
    ...generateDevKeys(),
    ALLOWED_ORIGINS: "http://localhost:5173, http://[::1]:3000",
  }).allowedOrigins;
  assert.deepEqual(local, ["http://localhost:5173", "http://[::1]:3000"]);
});

Deno.test("APP_ENV unset or blank: a function runs as production, the local server as development", () => {
  const { APP_ENV: _, ...unnamed } = productionEnv();
  const local = { ...unnamed, DATABASE_URL: "postgres://vault@127.0.0.1:5432/vault" };
  for (const blank of [{}, { APP_ENV: "" }, { APP_ENV: "  " }]) {
    assert.equal(parseConfig({ ...unnamed, ...blank }, FUNCTION_DEFAULTS).appEnv, "production");
    assert.equal(parseConfig({ ...local, ...blank }).appEnv, "development");
    // Development runs against a local database only: a remote one needs APP_ENV=production.
    assert.throws(() => parseConfig({ ...unnamed, ...blank }), /DATABASE_URL is not local/);
    // Development keys and no origins: fine locally, refused by a function that was not told.
    const devOnly = { ...generateDevKeys(), ...blank };
    assert.equal(parseConfig(devOnly).appEnv, "development");
    assert.throws(() => parseConfig(devOnly, FUNCTION_DEFAULTS), (error) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.problems[0], /APP_ENV=production requires DATABASE_URL/);
      assert.ok(error.problems.some((problem) => /development key/.test(problem)));
      return true;
    });
  }
  // Named, it is what it says, for either caller.
  const named = parseConfig({ APP_ENV: "development", ...generateDevKeys() }, FUNCTION_DEFAULTS);
  assert.equal(named.appEnv, "development");
});

Deno.test("development and test modes still start with generated keys and no origins", () => {
  for (const appEnv of ["development", "test"]) {
    const config = parseConfig({ APP_ENV: appEnv, ...generateDevKeys() });
    assert.equal(config.encryptionKeys[0].key.length, 32);
    assert.deepEqual(config.allowedOrigins, []);
    // And they still take the degenerate values production refuses (tests use them).
    parseConfig({
      APP_ENV: appEnv,
      ENCRYPTION_KEY: KEY_A,
      SERVER_REVEAL_TOKEN: TOKEN,
      JWT_SIGNING_KEYS: SIGNING_KEYS,
    });
  }
});

Deno.test("a key that is not 32 bytes of base64 is refused in development and in production", () => {
  for (const appEnv of ["development", "production"]) {
    for (const bad of ["not base64!", btoa("too short"), btoa("x".repeat(33))]) {
      const problems = problemsOf({
        APP_ENV: appEnv,
        DATABASE_URL: "postgres://h/db",
        ENCRYPTION_KEY: bad,
        SERVER_REVEAL_TOKEN: TOKEN,
        JWT_SIGNING_KEYS: SIGNING_KEYS,
      });
      assert.ok(
        problems.some((p) => /ENCRYPTION_KEY must be 32 bytes/.test(p)),
        `${appEnv}: ${bad}`,
      );
      assert.ok(problems.every((p) => !p.includes(bad)), "the bad value is never echoed");
    }
  }
});

Deno.test("short reveal tokens and JWT secrets are refused", () => {
  const problems = problemsOf({
    ENCRYPTION_KEY: KEY_A,
    SERVER_REVEAL_TOKEN: "short",
    JWT_SECRET: "short",
  });
  assert.ok(problems.some((p) => p.startsWith("SERVER_REVEAL_TOKEN")));
  assert.ok(problems.some((p) => p.startsWith("JWT_SECRET")));
});

Deno.test("a reveal token a header cannot carry as saved is refused by name, never echoed", () => {
  const token = randomBase64(32);
  for (const bad of [`${token}\n`, ` ${token}`, `${token.slice(0, 20)} ${token.slice(20)}`]) {
    for (const appEnv of ["development", "production"]) {
      const problems = problemsOf({
        APP_ENV: appEnv,
        ENCRYPTION_KEY: KEY_A,
        SERVER_REVEAL_TOKEN: bad,
        JWT_SECRET: randomBase64(32),
      });
      assert.ok(
        problems.some((p) => p.startsWith("SERVER_REVEAL_TOKEN") && p.includes("header")),
        `${appEnv}: ${problems.join("; ")}`,
      );
      assert.ok(problems.every((p) => !p.includes(token.slice(0, 20))), "the token is echoed");
    }
  }
});

Deno.test("a keyring lists keys newest first and the first one encrypts", () => {
  const config = parseConfig({
    ENCRYPTION_KEYS: `k2:${KEY_B},k1:${KEY_A}`,
    SERVER_REVEAL_TOKEN: TOKEN,
    JWT_SIGNING_KEYS: SIGNING_KEYS,
  });
  assert.deepEqual(config.encryptionKeys.map((k) => k.id), ["k2", "k1"]);
  assert.equal(config.encryptionKeys[0].key[0], 2);
  assert.ok(
    problemsOf({
      ENCRYPTION_KEYS: `k1:${KEY_A},k1:${KEY_B}`,
      SERVER_REVEAL_TOKEN: TOKEN,
      JWT_SIGNING_KEYS: SIGNING_KEYS,
    })
      .some((p) => /repeats the key id/.test(p)),
  );
  assert.ok(
    problemsOf({
      ENCRYPTION_KEYS: KEY_A,
      ENCRYPTION_KEY: KEY_A,
      SERVER_REVEAL_TOKEN: TOKEN,
      JWT_SIGNING_KEYS: SIGNING_KEYS,
    })
      .some((p) => /not both/.test(p)),
  );
});

Deno.test("Supabase's own variables configure the database, project and function URLs", () => {
  const { DATABASE_URL: _, ...env } = productionEnv({
    SUPABASE_URL: "https://abcdefgh.supabase.co",
    SUPABASE_DB_URL: "postgresql://postgres:pw@db.abcdefgh.supabase.co:5432/postgres",
    SUPABASE_ANON_KEY: "anon-key",
    SUPABASE_SERVICE_ROLE_KEY: "service-role-key",
  });
  const config = parseConfig(env);
  assert.equal(config.database.engine === "postgres" && config.database.url, env.SUPABASE_DB_URL);
  assert.deepEqual(config.database.engine, "postgres");
  assert.equal(config.projectName, "abcdefgh");
  assert.equal(config.supabase.anonKey, "anon-key");
});

Deno.test("development without a database URL uses embedded PGlite in .local", () => {
  const config = parseConfig({
    ENCRYPTION_KEY: KEY_A,
    SERVER_REVEAL_TOKEN: TOKEN,
    JWT_SIGNING_KEYS: SIGNING_KEYS,
  });
  assert.deepEqual(config.database, { engine: "pglite", dataDir: ".local/pglite" });
  assert.equal(config.port, 54321);
});

Deno.test("development keys are generated once into a 0600 file, reused, and kept 0600", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/nested/dev-keys.json`;
    const first = await loadOrCreateDevKeys(path);
    assert.equal(first.created, true);
    assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
    // Copied or restored readable by everyone: made the owner's alone again when loaded.
    await Deno.chmod(path, 0o644);
    const second = await loadOrCreateDevKeys(path);
    assert.equal(second.created, false);
    assert.deepEqual(second.keys, first.keys);
    assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
    const config = parseConfig(withDevKeys({}, first.keys));
    assert.equal(config.encryptionKeys[0].key.length, 32);
    // The development credential is a row the server registers, not the legacy token.
    assert.ok(isLiveRunCredential(first.keys.SERVER_REVEAL_TOKEN));
    assert.equal(config.serverRevealToken, "");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a development keys file from before credentials keeps its keys and gains a credential", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/dev-keys.json`;
    const old = {
      ...generateDevKeys(),
      SERVER_REVEAL_TOKEN: `${DEV_SECRET_PREFIX}${"x".repeat(43)}`,
    };
    await Deno.writeTextFile(path, JSON.stringify(old), { mode: 0o600 });
    const { keys, created } = await loadOrCreateDevKeys(path);
    assert.equal(created, false);
    assert.deepEqual(
      [keys.ENCRYPTION_KEY, keys.JWT_SIGNING_KEYS],
      [old.ENCRYPTION_KEY, old.JWT_SIGNING_KEYS],
    );
    assert.ok(isLiveRunCredential(keys.SERVER_REVEAL_TOKEN));
    // Kept: the next start registers the same credential.
    assert.deepEqual((await loadOrCreateDevKeys(path)).keys, keys);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("settings from the environment win over development keys", () => {
  const merged = withDevKeys({ JWT_SIGNING_KEYS: SIGNING_KEYS }, generateDevKeys());
  assert.equal(merged.JWT_SIGNING_KEYS, SIGNING_KEYS);
  assert.ok(merged.ENCRYPTION_KEY);
});

/** Runs one of the project's programs with `env` as its whole environment. */
async function runAlone(program: string, env: Record<string, string>) {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", new URL(`../${program}`, import.meta.url).pathname],
    env,
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  return {
    code: output.code,
    stdout: text.decode(output.stdout),
    stderr: text.decode(output.stderr),
  };
}

Deno.test("the local server refuses to start in production without configuration", async () => {
  const output = await runAlone("server/main.ts", { APP_ENV: "production", PORT: "0" });
  assert.notEqual(output.code, 0);
  for (const name of [...REQUIRED, "ALLOWED_ORIGINS"]) {
    assert.match(output.stderr, new RegExp(name));
  }
  assert.equal(output.stdout, "", "it never gets as far as listening");
});

Deno.test("db:migrate refuses a database URL that does not parse by name, never quoting it", async () => {
  const password = "p4ss#w0rd-for-migrate";
  const output = await runAlone("scripts/migrate.ts", {
    SUPABASE_DB_URL: `postgres://svc:${password}@db.example.com:5432/postgres`,
  });
  assert.equal(output.code, 1);
  assert.match(output.stderr, /SUPABASE_DB_URL is not a valid URL/);
  assert.ok(!output.stderr.includes("w0rd"), "the password reached the output");
});

Deno.test("an operator command needs the database and the keyring, not the service's secrets", () => {
  const storage = parseStorageConfig({
    DATABASE_URL: "postgres://vault@db.internal:5432/vault",
    ENCRYPTION_KEYS: `k2:${randomBase64(32)},k1:${KEY_A}`,
  });
  assert.equal(storage.database.engine, "postgres");
  assert.deepEqual(storage.encryptionKeys.map((key) => key.id), ["k2", "k1"]);
  assert.throws(() => parseStorageConfig({}), (error) => {
    assert.ok(error instanceof ConfigError);
    assert.deepEqual(error.problems, ["ENCRYPTION_KEYS (or ENCRYPTION_KEY) is not set"]);
    return true;
  });
  // Production asks for a Postgres URL and the keyring, nothing else, even beside a bad value…
  assert.throws(() => parseStorageConfig({ APP_ENV: "production", PORT: "abc" }), (error) => {
    assert.ok(error instanceof ConfigError);
    assert.deepEqual(error.problems, [
      "APP_ENV=production requires DATABASE_URL (or SUPABASE_DB_URL), ENCRYPTION_KEYS (or ENCRYPTION_KEY)",
      "PORT: must be an integer from 0 to 65535",
    ]);
    return true;
  });
  assert.throws(
    () => parseStorageConfig({ APP_ENV: "production", ENCRYPTION_KEYS: `k1:${randomBase64(32)}` }),
    /APP_ENV=production requires DATABASE_URL \(or SUPABASE_DB_URL\)$/,
  );
  // …and still refuses a key that is not random (to leave one, rotate without production).
  assert.throws(
    () =>
      parseStorageConfig({
        APP_ENV: "production",
        DATABASE_URL: "postgres://vault@db.internal:5432/vault",
        ENCRYPTION_KEYS: `k1:${KEY_A}`,
      }),
    ConfigError,
  );
});

/** URLs the driver cannot read: each would have been quoted whole, password and all. */
const UNREADABLE_DATABASE_URLS = [
  "postgres://svc:Sup3rS3cret-one@db1:5432,db2:5432/postgres", // two hosts
  "postgres://svc:p4ss#w0rd-two@db.example.com:6543/postgres", // # unencoded
  "postgres://svc:pa/ss-three@db.example.com/postgres", // / unencoded
  "postgres://svc:pa?ss-four@db.example.com/postgres", // ? unencoded
  "postgres://svc:pa%zzss-five@db.example.com/postgres", // % that decodes to nothing
  "postgres://svc:password-six@db.example.com:99999/postgres", // no such port
  // Digits, then an unencoded / ? or #: read as a port, the user as the host, the rest elsewhere.
  "postgres://localhost:5432/Tr0ub4dor-seven@db.example.com/postgres",
  "postgres://localhost:5432?Tr0ub4dor-eight@db.example.com/postgres",
  "postgres://localhost:5432#Tr0ub4dor-nine@db.example.com/postgres",
  "postgres://svc:p@ss-ten@db.example.com/postgres", // @ unencoded: the driver and URL disagree
];

Deno.test("a database URL that does not parse is refused by name, its password never echoed", () => {
  for (const url of UNREADABLE_DATABASE_URLS) {
    const password = /:\/\/[a-z]+:(.*?-[a-z]+)@/.exec(url)![1];
    for (const name of ["DATABASE_URL", "SUPABASE_DB_URL"]) {
      // Blank, DATABASE_URL gives way to SUPABASE_DB_URL (as a function deployed by Supabase has).
      const production = productionEnv({ DATABASE_URL: "", [name]: url });
      const development = {
        [name]: url,
        ENCRYPTION_KEYS: `k1:${KEY_A}`,
        SERVER_REVEAL_TOKEN: TOKEN,
        JWT_SIGNING_KEYS: SIGNING_KEYS,
      };
      const refusals = [
        () => parseConfig(production),
        () => parseConfig(production, FUNCTION_DEFAULTS),
        () => parseConfig(development),
        () => parseStorageConfig(development),
      ];
      for (const refuse of refusals) {
        assert.throws(refuse, (error) => {
          assert.ok(error instanceof ConfigError, `${url}: ${error}`);
          assert.ok(
            error.problems.some((p) => p.startsWith(`${name} is not a valid URL`)),
            `${url}: ${error.problems.join("; ")}`,
          );
          assert.ok(!error.message.includes(password), `${url}: the password was echoed`);
          return true;
        });
      }
    }
  }
});

Deno.test("statements are prepared unless the URL is a pooler's or DATABASE_PREPARE turns them off", () => {
  const direct = { url: "postgres://db/x", pooler: false };
  const pooled = { url: "postgres://db:6543/x", pooler: true };
  assert.equal(preparesStatements(direct, undefined), true);
  assert.equal(preparesStatements(direct, "true"), true);
  for (const off of ["false", "0", " false "]) assert.equal(preparesStatements(direct, off), false);
  for (const setting of [undefined, "true", "false"]) {
    assert.equal(preparesStatements(pooled, setting), false);
  }
});

Deno.test("a readable database URL reaches the driver as given; a pooler's turns preparing off", () => {
  const settingsOf = (url: string) => {
    const { database } = parseStorageConfig({ DATABASE_URL: url, ENCRYPTION_KEYS: `k1:${KEY_A}` });
    assert.equal(database.engine, "postgres");
    return database as Extract<typeof database, { engine: "postgres" }>;
  };
  // A # or @ percent-encoded in the password is the password's.
  for (
    const url of ["postgres://svc:p%23ss@db.example.com:5432/vault", "postgres://svc:p%40ss@h/db"]
  ) {
    assert.deepEqual([settingsOf(url).url, settingsOf(url).prepare], [url, true]);
  }
  assert.equal(settingsOf("postgres://svc:pw@db.example.com:6543/postgres").prepare, false);
  const hinted = settingsOf("postgresql://svc:pw@db.example.com:5432/postgres?pgbouncer=true&x=1");
  assert.deepEqual([hinted.url, hinted.prepare], [
    "postgresql://svc:pw@db.example.com:5432/postgres?x=1",
    false,
  ]);
  assert.throws(() => settingsOf("mysql://svc:pw@db.example.com/vault"), (error) => {
    assert.ok(error instanceof ConfigError);
    assert.deepEqual(error.problems, ["DATABASE_URL must be a postgres:// or postgresql:// URL"]);
    return true;
  });
});

Deno.test("an access token lifetime shorter than two minutes is refused, naming the setting", () => {
  assert.equal(
    parseConfig(productionEnv({ ACCESS_TOKEN_TTL_SECONDS: "120" })).accessTokenTtlSeconds,
    120,
  );
  for (const short of ["60", "119", "1"]) {
    const problems = productionProblems({ ACCESS_TOKEN_TTL_SECONDS: short });
    assert.ok(
      problems.some((p) => p.startsWith("ACCESS_TOKEN_TTL_SECONDS: must be at least 120")),
      problems.join("; "),
    );
  }
});

Deno.test("a wallet's RPC cap below ten clients' shares is refused in every mode, naming both settings", () => {
  const tooLow = "RATE_LIMIT_RPC_PER_ADDRESS_PER_MINUTE must be at least 10 times " +
    "RATE_LIMIT_RPC_PER_ADDRESS_PER_CLIENT_PER_MINUTE (a handful of clients would use a wallet's " +
    "whole cap and lock its owner out)";
  const refused: Record<string, string>[] = [
    { RATE_LIMIT_RPC_PER_ADDRESS_PER_MINUTE: "49" }, // the per-client default is 5
    { RATE_LIMIT_RPC_PER_ADDRESS_PER_CLIENT_PER_MINUTE: "11" }, // the per-wallet default is 100
    {
      RATE_LIMIT_RPC_PER_ADDRESS_PER_MINUTE: "100",
      RATE_LIMIT_RPC_PER_ADDRESS_PER_CLIENT_PER_MINUTE: "100",
    },
  ];
  for (const limits of refused) {
    assert.deepEqual(problemsOf({ ...generateDevKeys(), ...limits }), [tooLow]);
    assert.deepEqual(productionProblems(limits), [tooLow]);
  }
  const accepted: [Record<string, string>, number, number][] = [
    [{}, 100, 5],
    [{ RATE_LIMIT_RPC_PER_ADDRESS_PER_MINUTE: "50" }, 50, 5],
    [{ RATE_LIMIT_RPC_PER_ADDRESS_PER_CLIENT_PER_MINUTE: "10" }, 100, 10],
  ];
  for (const [limits, perAddress, perClient] of accepted) {
    const { rateLimits } = parseConfig(productionEnv(limits));
    assert.deepEqual(
      [rateLimits.rpcPerAddressPerMinute, rateLimits.rpcPerAddressPerClientPerMinute],
      [perAddress, perClient],
    );
  }
});

/** Every integer setting and its bounds, written out here so that a changed bound shows. */
const INTEGER_BOUNDS: Record<string, readonly [number, number]> = {
  PORT: [0, 65_535],
  DATABASE_MAX_CONNECTIONS: [1, 1000],
  DATABASE_TIMEOUT_MS: [1, 600_000],
  NONCE_TTL_SECONDS: [1, 86_400],
  ACCESS_TOKEN_TTL_SECONDS: [120, 86_400],
  REFRESH_TOKEN_TTL_SECONDS: [1, 365 * 86_400],
  RATE_LIMIT_NONCE_PER_MINUTE: [1, 1_000_000],
  RATE_LIMIT_PROOF_PER_MINUTE: [1, 1_000_000],
  RATE_LIMIT_PROOF_PER_ADDRESS_PER_MINUTE: [1, 1_000_000],
  RATE_LIMIT_REFRESH_PER_MINUTE: [1, 1_000_000],
  RATE_LIMIT_VAULT_WRITES_PER_MINUTE: [1, 1_000_000],
  RATE_LIMIT_REVEALS_PER_MINUTE: [1, 1_000_000],
  RATE_LIMIT_REVEALS_PER_TOKEN_PER_MINUTE: [1, 1_000_000],
  RATE_LIMIT_WRONG_REVEAL_TOKENS_PER_MINUTE: [1, 1_000_000],
  AUDIT_RETENTION_DAYS: [1, 36_500],
  CLIENT_IP_TRUSTED_HOPS: [1, 10],
  RATE_LIMIT_RPC_PER_MINUTE: [1, 1_000_000],
  RATE_LIMIT_RPC_PER_ADDRESS_PER_MINUTE: [1, 1_000_000],
  RATE_LIMIT_RPC_PER_ADDRESS_PER_CLIENT_PER_MINUTE: [1, 1_000_000],
  CHAIN_RPC_TIMEOUT_MS: [1, 60_000],
};

const ACCESS_TOKEN_TOO_SHORT = "must be at least 120 (clients refresh 60 s before expiry)";

/** The value `name` is read as from `given` alone, or the problems with it. */
function readOne(name: string, given: string): unknown {
  const read = readEnvVars({ APP_ENV: "test", [name]: given });
  return read.problems ?? (read.vars as Record<string, unknown>)[name];
}

Deno.test("every integer setting refuses a non-integer, a negative and one past its bound, by name, never echoing it", () => {
  const integers = Object.entries(ENV_VARS).filter(([, spec]) => spec.kind === "integer");
  assert.deepEqual(integers.map(([name]) => name).sort(), Object.keys(INTEGER_BOUNDS).sort());
  for (const [name, [min, max]] of Object.entries(INTEGER_BOUNDS)) {
    const or = name === "AUDIT_RETENTION_DAYS" ? ", or forever" : "";
    const range = `${name}: must be an integer from ${min} to ${max}${or}`;
    const tooLow = name === "ACCESS_TOKEN_TTL_SECONDS"
      ? `${name}: ${ACCESS_TOKEN_TOO_SHORT}`
      : range;
    const refusals: (readonly [string, string])[] = [
      ...["12.5", "1e3", "0x1f", "+7", "7 7", "seven", "Infinity"].map((v) => [v, range] as const),
      ["-3", tooLow],
      [String(min - 1), tooLow],
      [String(max + 1), range],
      ["98765432109876543210", range],
    ];
    for (const [bad, problem] of refusals) {
      // One fixed text whatever the value, so none is ever quoted.
      assert.deepEqual(
        problemsOf({ ...generateDevKeys(), [name]: bad }),
        [problem],
        `${name}=${bad}`,
      );
    }
    // Decimal digits, surrounding whitespace allowed; both bounds included.
    assert.equal(readOne(name, String(min)), min);
    assert.equal(readOne(name, ` ${max}\t\n`), max);
    assert.equal(readOne(name, `0${min + 1}`), min + 1);
  }
});

/** What parseConfig makes of `env`: the configuration, or the problems it names. */
function outcome(env: Record<string, string>): AppConfig | readonly string[] {
  try {
    return parseConfig(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.problems;
  }
}

Deno.test("a blank or whitespace-only setting counts as unset, so its default applies", () => {
  const base = { ...generateDevKeys(), DATABASE_URL: "postgres://vault@127.0.0.1:5432/vault" };
  for (const name of Object.keys(ENV_VARS)) {
    const { [name]: _, ...unset } = base as Record<string, string>;
    for (const blank of ["", " ", "\t\n \r"]) {
      assert.deepEqual(
        outcome({ ...unset, [name]: blank }),
        outcome(unset),
        `${name}=${JSON.stringify(blank)}`,
      );
    }
  }
  const blanks = Object.fromEntries(Object.keys(ENV_VARS).map((name) => [name, " \t"]));
  const config = parseConfig({ ...blanks, ...generateDevKeys() });
  assert.deepEqual(
    [config.appEnv, config.port, config.accessTokenTtlSeconds, config.clientIp, config.database],
    ["development", 54321, 3600, { header: "x-forwarded-for", trustedHops: 1 }, {
      engine: "pglite",
      dataDir: ".local/pglite",
    }],
  );
});

Deno.test("CLIENT_IP_HEADER is trimmed and lower-cased; another header is refused without quoting it", () => {
  const headerOf = (given: string) =>
    parseConfig({ ...generateDevKeys(), CLIENT_IP_HEADER: given }).clientIp.header;
  assert.equal(headerOf(" X-Real-IP\t"), "x-real-ip");
  assert.equal(headerOf("\nCF-Connecting-IP "), "cf-connecting-ip");
  assert.equal(headerOf("X-FORWARDED-FOR"), "x-forwarded-for");
  for (const bad of ["X-Secret-Header-Abc", "x-real-ip, x-forwarded-for", "x-real-ip\u0000"]) {
    const [problem, ...more] = problemsOf({ ...generateDevKeys(), CLIENT_IP_HEADER: bad });
    assert.deepEqual(more, []);
    assert.match(problem, /^CLIENT_IP_HEADER: must be one of x-forwarded-for, x-real-ip, /);
    assert.ok(!problem.toLowerCase().includes("secret-header"), "the header was echoed");
  }
});

Deno.test("every malformed setting is named at once, in the table's order, none quoting its value", () => {
  assert.deepEqual(
    problemsOf({
      APP_ENV: "prod-eu-west",
      PORT: "port-9000x",
      DATABASE_PREPARE: "sometimes",
      JWT_SECRET: "short-secret-value",
      NONCE_TTL_SECONDS: "0.5",
      CLIENT_IP_HEADER: "X-Secret-Header-Abc",
    }),
    [
      "APP_ENV: must be one of development, test, production",
      "PORT: must be an integer from 0 to 65535",
      "DATABASE_PREPARE: must be one of true, false, 1, 0",
      "JWT_SECRET: JWT_SECRET must be at least 32 characters",
      "NONCE_TTL_SECONDS: must be an integer from 1 to 86400",
      "CLIENT_IP_HEADER: must be one of x-forwarded-for, x-real-ip, cf-connecting-ip, " +
      "true-client-ip, fastly-client-ip, fly-client-ip, x-client-ip, x-cluster-client-ip, " +
      "x-appengine-user-ip (a header a trusted proxy sets to the client's address)",
    ],
  );
  // Text settings are trimmed; secrets are kept exactly as given (production judges them).
  const padded = ` ${SECRET} `;
  const config = parseConfig({
    ...generateDevKeys(),
    PROJECT_NAME: "  demo\n",
    JWT_SECRET: padded,
  });
  assert.deepEqual([config.projectName, config.jwtSecret], ["demo", padded]);
});

/** The Default column of docs/operations.md's configuration table, by variable. */
async function documentedDefaults(): Promise<Map<string, string>> {
  const text = await Deno.readTextFile(new URL("../docs/operations.md", import.meta.url));
  const rows = text.matchAll(/^\| `([A-Z0-9_]+)` +\| (.*?) +\|/gm);
  return new Map([...rows].map(([, name, cell]) => [name, cell]));
}

Deno.test("every setting's default is the one docs/operations.md documents", async () => {
  const documented = await documentedDefaults();
  const read = readEnvVars({ APP_ENV: "test" });
  assert.ok(read.problems === undefined);
  // Defaults config.ts applies after reading, as the configurations it makes show them.
  const local = parseConfig({ ...generateDevKeys() });
  const localDatabase = { ...generateDevKeys(), DATABASE_URL: "postgres://vault@127.0.0.1/vault" };
  const localPostgres = parseConfig(localDatabase).database;
  const deployed = parseConfig(productionEnv({ APP_ENV: "" }), FUNCTION_DEFAULTS);
  assert.ok(local.database.engine === "pglite" && localPostgres.engine === "postgres");
  assert.ok(deployed.database.engine === "postgres");
  const appliedLater: Record<string, unknown[]> = {
    APP_ENV: [local.appEnv, deployed.appEnv],
    PROJECT_NAME: [local.projectName],
    DATABASE_MAX_CONNECTIONS: [deployed.database.maxConnections, localPostgres.maxConnections],
    DATABASE_PREPARE: [localPostgres.prepare],
    PGLITE_DATA_DIR: [local.database.dataDir],
    CLIENT_IP_TRUSTED_HOPS: [local.clientIp.trustedHops],
  };
  for (const name of Object.keys(ENV_VARS)) {
    const cell = documented.get(name);
    assert.ok(cell !== undefined, `${name} is not in the configuration table`);
    const value: unknown = name === "APP_ENV"
      ? undefined
      : (read.vars as Record<string, unknown>)[name];
    if (value !== undefined) {
      assert.equal(cell, `\`${value}\``, name);
    } else if (name in appliedLater) {
      for (const applied of appliedLater[name]) assert.ok(cell.includes(`\`${applied}\``), name);
    } else {
      assert.doesNotMatch(cell, /^`[^`]*`$/, `${name}: a default the code does not apply`);
    }
  }
});

Deno.test("JWT_SIGNING_KEYS takes the CLI's one JWK or signing_keys.json's array, the first signing", () => {
  const [first, second] = [signingKey(), signingKey()];
  const one = parseConfig({ ...generateDevKeys(), JWT_SIGNING_KEYS: JSON.stringify(first) });
  assert.equal(one.sessionKeys.signing.alg === "ES256" && one.sessionKeys.signing.kid, first.kid);
  const both = parseConfig({
    ...generateDevKeys(),
    JWT_SIGNING_KEYS: JSON.stringify([second, first]),
  });
  assert.equal(
    both.sessionKeys.signing.alg === "ES256" && both.sessionKeys.signing.kid,
    second.kid,
  );
  assert.deepEqual(both.sessionKeys.published.map((key) => key.kid), [second.kid, first.kid]);
  assert.equal(both.sessionKeys.legacySecret, null);
  for (const key of both.sessionKeys.published) {
    assert.ok(!("d" in key), "a private member published");
  }
});

Deno.test("a signing key of another curve, a short RSA key, a secret or a public key alone is refused, never echoed", async () => {
  const { privateKey: rsa1024 } = await crypto.subtle.generateKey(
    {
      name: "RSASSA-PKCS1-v1_5",
      modulusLength: 1024,
      publicExponent: new Uint8Array([1, 0, 1]),
      hash: "SHA-256",
    },
    true,
    ["sign", "verify"],
  );
  const { privateKey: p384 } = await crypto.subtle.generateKey(
    { name: "ECDSA", namedCurve: "P-384" },
    true,
    ["sign", "verify"],
  );
  const good = signingKey();
  const { d: _d, ...publicOnly } = good;
  const cases: [unknown, RegExp][] = [
    [{ ...(await crypto.subtle.exportKey("jwk", p384)), kid: "k" }, /must be on the curve P-256/],
    [{ ...good, crv: "secp256k1" }, /must be on the curve P-256/],
    [{ ...good, alg: "ES384" }, /on P-256 must be ES256/],
    [
      { ...(await crypto.subtle.exportKey("jwk", rsa1024)), kid: "k", alg: "RS256" },
      /at least 2048 bits/,
    ],
    [{ kty: "oct", kid: "k", k: randomBase64(32), alg: "HS256" }, /a shared secret/],
    [publicOnly, /private d/],
    [{ ...good, kid: undefined }, /needs a kid/],
    [{ ...good, use: "enc" }, /use other than "sig"/],
    [[good, { ...signingKey(), kid: good.kid }], /entry 2 repeats the kid/],
    [[], /holds no key/],
  ];
  for (const [given, expected] of cases) {
    const text = JSON.stringify(given);
    const problems = problemsOf({ ...generateDevKeys(), JWT_SIGNING_KEYS: text });
    assert.ok(problems.some((p) => expected.test(p)), `${expected}: ${problems}`);
    for (const problem of problems) assert.ok(!problem.includes(String(good.d)), "d echoed");
  }
  const unparsable = `{"kty":"EC","d":"${good.d}"`;
  const problems = problemsOf({ ...generateDevKeys(), JWT_SIGNING_KEYS: unparsable });
  assert.deepEqual(problems, ["JWT_SIGNING_KEYS must be JSON: a JWK, or an array of JWKs"]);
});

Deno.test("production refuses to start without signing keys unless HS256 is chosen explicitly", () => {
  const { JWT_SIGNING_KEYS: _, ...withoutKeys } = productionEnv();
  const [missing] = problemsOf(withoutKeys);
  assert.match(missing, /requires JWT_SIGNING_KEYS \(or JWT_LEGACY_HS256=sign with JWT_SECRET\)/);
  // JWT_SECRET alone is not a choice of HS256: it could be a leftover.
  assert.ok(withoutKeys.JWT_SECRET);
  const legacy = parseConfig({ ...withoutKeys, JWT_LEGACY_HS256: "sign" });
  assert.equal(legacy.sessionKeys.signing.alg, "HS256");
  assert.deepEqual(legacy.sessionKeys.published, []);
  const { JWT_SECRET: __, ...neither } = withoutKeys;
  assert.ok(
    problemsOf({ ...neither, JWT_LEGACY_HS256: "sign" }).includes(
      "JWT_LEGACY_HS256=sign needs JWT_SECRET",
    ),
  );
  assert.ok(
    problemsOf({ ...withoutKeys, JWT_LEGACY_HS256: "verify" }).includes(
      "JWT_LEGACY_HS256=verify (migrating to signing keys) needs JWT_SIGNING_KEYS",
    ),
  );
  const migrating = parseConfig(productionEnv({ JWT_LEGACY_HS256: "verify" }));
  assert.equal(migrating.sessionKeys.signing.alg, "ES256");
  assert.equal(migrating.sessionKeys.legacySecret, migrating.jwtSecret);
});

Deno.test("the issuer is the project's Auth URL when SUPABASE_URL is set, JWT_ISSUER when given", () => {
  const supabase = parseConfig(productionEnv({ SUPABASE_URL: "https://abcdefgh.supabase.co" }));
  assert.equal(supabase.sessionKeys.issuer, "https://abcdefgh.supabase.co/auth/v1");
  const own = parseConfig(productionEnv({ JWT_ISSUER: "https://auth.example.com" }));
  assert.equal(own.sessionKeys.issuer, "https://auth.example.com");
  assert.equal(parseConfig({ ...generateDevKeys() }).sessionKeys.issuer, "wallet-proof");
});

Deno.test("a dev-keys file written before signing keys gains an ES256 key and keeps the others", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/dev-keys.json`;
    const old = { ENCRYPTION_KEY: KEY_A, SERVER_REVEAL_TOKEN: TOKEN, JWT_SECRET: SECRET };
    await Deno.writeTextFile(path, JSON.stringify(old));
    const { keys, created } = await loadOrCreateDevKeys(path);
    assert.equal(created, false);
    assert.equal(keys.ENCRYPTION_KEY, KEY_A, "stored secrets stay decryptable");
    // The single token of that time gives way to a development credential (see the test above).
    assert.ok(isLiveRunCredential(keys.SERVER_REVEAL_TOKEN));
    const [jwk] = JSON.parse(keys.JWT_SIGNING_KEYS);
    assert.equal(jwk.alg, "ES256");
    assert.ok(jwk.kid.startsWith(DEV_KID_PREFIX));
    const again = await loadOrCreateDevKeys(path);
    assert.deepEqual(again.keys, keys, "written once, then reused");
    const config = parseConfig({ ...again.keys });
    assert.equal(config.sessionKeys.signing.alg, "ES256");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
