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
import { preparesStatements } from "../functions/_shared/config/parse.ts";
import { DEV_ENCRYPTION_KEY_MARK, DEV_SECRET_PREFIX } from "../functions/_shared/config/keyring.ts";
import { generateDevKeys, loadOrCreateDevKeys, withDevKeys } from "../server/dev-keys.ts";
import {
  base64,
  problemsOf,
  productionEnv,
  productionProblems,
  randomBase64,
} from "./support/config-env.ts";

const KEY_A = btoa(String.fromCharCode(...new Uint8Array(32).fill(1)));
const KEY_B = btoa(String.fromCharCode(...new Uint8Array(32).fill(2)));
const TOKEN = "r".repeat(40);
const SECRET = "j".repeat(48);

const REQUIRED = ["DATABASE_URL", "ENCRYPTION_KEYS", "SERVER_REVEAL_TOKEN", "JWT_SECRET"];

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
  assert.ok(dev.SERVER_REVEAL_TOKEN.startsWith(DEV_SECRET_PREFIX));
  assert.ok(dev.JWT_SECRET.startsWith(DEV_SECRET_PREFIX));
  const made = "made by the local server; generate one for production";
  assert.deepEqual(productionProblems({ ...dev }), [
    `ENCRYPTION_KEY is a development key ${made}`,
    `SERVER_REVEAL_TOKEN is a development secret ${made}`,
    `JWT_SECRET is a development secret ${made}`,
  ]);
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
    ALLOWED_ORIGINS: "https://App.Example.com/, https://localhost:5173, https://[::1]:3000",
  })).allowedOrigins;
  assert.deepEqual(accepted, [
    "https://app.example.com",
    "https://localhost:5173",
    "https://[::1]:3000",
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
      JWT_SECRET: TOKEN,
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
        JWT_SECRET: SECRET,
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
    JWT_SECRET: SECRET,
  });
  assert.deepEqual(config.encryptionKeys.map((k) => k.id), ["k2", "k1"]);
  assert.equal(config.encryptionKeys[0].key[0], 2);
  assert.ok(
    problemsOf({
      ENCRYPTION_KEYS: `k1:${KEY_A},k1:${KEY_B}`,
      SERVER_REVEAL_TOKEN: TOKEN,
      JWT_SECRET: SECRET,
    })
      .some((p) => /repeats the key id/.test(p)),
  );
  assert.ok(
    problemsOf({
      ENCRYPTION_KEYS: KEY_A,
      ENCRYPTION_KEY: KEY_A,
      SERVER_REVEAL_TOKEN: TOKEN,
      JWT_SECRET: SECRET,
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
    JWT_SECRET: SECRET,
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
    assert.equal(config.serverRevealToken, first.keys.SERVER_REVEAL_TOKEN);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("settings from the environment win over development keys", () => {
  const merged = withDevKeys({ JWT_SECRET: SECRET }, generateDevKeys());
  assert.equal(merged.JWT_SECRET, SECRET);
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
      "PORT: Invalid input: expected number, received NaN",
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
        JWT_SECRET: SECRET,
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
