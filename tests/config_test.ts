/**
 * Configuration: development fills gaps with generated keys, production fails closed, malformed
 * values are refused in every mode, and Supabase's own variables are understood.
 */
import assert from "node:assert/strict";
import { ConfigError, parseConfig } from "../functions/_shared/config.ts";
import { generateDevKeys, loadOrCreateDevKeys, withDevKeys } from "../server/dev-keys.ts";

const KEY_A = btoa(String.fromCharCode(...new Uint8Array(32).fill(1)));
const KEY_B = btoa(String.fromCharCode(...new Uint8Array(32).fill(2)));
const TOKEN = "r".repeat(40);
const SECRET = "j".repeat(48);

function problemsOf(env: Record<string, string>): string[] {
  try {
    parseConfig(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return [...error.problems];
  }
  assert.fail("expected the configuration to be refused");
}

Deno.test("production with nothing set names every missing variable in one line", () => {
  const [first] = problemsOf({ APP_ENV: "production" });
  for (const name of ["DATABASE_URL", "ENCRYPTION_KEYS", "SERVER_REVEAL_TOKEN", "JWT_SECRET"]) {
    assert.match(first, new RegExp(name));
  }
});

Deno.test("production starts when the four required settings are given", () => {
  const config = parseConfig({
    APP_ENV: "production",
    DATABASE_URL: "postgres://vault@db.internal:5432/vault",
    ENCRYPTION_KEY: KEY_A,
    SERVER_REVEAL_TOKEN: TOKEN,
    JWT_SECRET: SECRET,
  });
  assert.equal(config.appEnv, "production");
  assert.equal(config.database.engine, "postgres");
  assert.deepEqual(config.encryptionKeys.map((k) => k.id), ["k1"]);
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
  const config = parseConfig({
    APP_ENV: "production",
    SUPABASE_URL: "https://abcdefgh.supabase.co",
    SUPABASE_DB_URL: "postgresql://postgres:pw@db.abcdefgh.supabase.co:5432/postgres",
    SUPABASE_ANON_KEY: "anon-key",
    SUPABASE_SERVICE_ROLE_KEY: "service-role-key",
    ENCRYPTION_KEY: KEY_A,
    SERVER_REVEAL_TOKEN: TOKEN,
    JWT_SECRET: SECRET,
  });
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

Deno.test("development keys are generated once into a 0600 file and reused", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/nested/dev-keys.json`;
    const first = await loadOrCreateDevKeys(path);
    assert.equal(first.created, true);
    assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
    const second = await loadOrCreateDevKeys(path);
    assert.equal(second.created, false);
    assert.deepEqual(second.keys, first.keys);
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

Deno.test("the local server refuses to start in production without configuration", async () => {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", new URL("../server/main.ts", import.meta.url).pathname],
    env: { APP_ENV: "production", PORT: "0" },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.notEqual(output.code, 0);
  const stderr = new TextDecoder().decode(output.stderr);
  for (const name of ["DATABASE_URL", "ENCRYPTION_KEYS", "SERVER_REVEAL_TOKEN", "JWT_SECRET"]) {
    assert.match(stderr, new RegExp(name));
  }
  assert.equal(new TextDecoder().decode(output.stdout), "", "it never gets as far as listening");
});
