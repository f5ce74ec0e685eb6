/** Environments for the configuration tests, and the problems a refused one names. */
import assert from "node:assert/strict";
import { ConfigError, parseConfig } from "../../functions/_shared/config/config.ts";
import { generateDevSigningKey } from "../../server/dev-keys.ts";

export const base64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
export const randomBytes = (length: number) => crypto.getRandomValues(new Uint8Array(length));
export const randomBase64 = (length: number) => base64(randomBytes(length));

/** A private ES256 JWK as `supabase gen signing-key` prints it, under a kid of its own. */
export const signingKey = (): Record<string, unknown> => ({
  ...generateDevSigningKey(),
  kid: crypto.randomUUID(),
});

/** Settings production accepts: real random keys and secrets, an origin. */
export function productionEnv(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    APP_ENV: "production",
    DATABASE_URL: "postgres://vault@db.internal:5432/vault",
    ENCRYPTION_KEY: randomBase64(32),
    SERVER_REVEAL_TOKEN: randomBase64(32),
    JWT_SECRET: randomBase64(48),
    JWT_SIGNING_KEYS: JSON.stringify(signingKey()),
    ALLOWED_ORIGINS: "https://app.example.com",
    ...overrides,
  };
}

/** The problems production names for `overrides`; none of them quotes a value of `env`. */
export function productionProblems(overrides: Record<string, string>): string[] {
  const env = productionEnv(overrides);
  const problems = problemsOf(env);
  for (const [name, value] of Object.entries(env)) {
    if (name === "APP_ENV" || value.trim().length < 8) continue;
    for (const problem of problems) {
      assert.ok(!problem.includes(value.trim()), `${name}'s value echoed`);
    }
  }
  return problems;
}

/** The problems parseConfig names for `env`; fails when it is accepted. */
export function problemsOf(env: Record<string, string>): string[] {
  try {
    parseConfig(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return [...error.problems];
  }
  assert.fail("expected the configuration to be refused");
}
