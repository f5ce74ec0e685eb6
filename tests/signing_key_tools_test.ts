/**
 * Proof with real tools: the pinned Supabase CLI generates the signing key (`supabase gen
 * signing-key --algorithm ES256`), the service loads it as JWT_SIGNING_KEYS, a wallet signs in,
 * and the session verifies three independent ways against what the local server publishes:
 * jose's createRemoteJWKSet on wallet-proof's JWKS URL, supabase-js's own `auth.getClaims()` on
 * /auth/v1/.well-known/jwks.json, and the package's server client (createSessionCheck). The CLI
 * runs in a throwaway folder and HOME. Skipped, saying so, where the CLI is not installed, except
 * under CI=true, where that fails.
 */
import assert from "node:assert/strict";
import { createClient } from "@supabase/supabase-js";
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import { atEdge, LOCAL_ANON_KEY } from "../server/app.ts";
import { createSessionCheck } from "../sdk/src/server.ts";
import { VaultError } from "../sdk/src/errors.ts";
import { signIn, type TestApp } from "./support/app.ts";
import { strangerSigner } from "./support/session-signers.ts";
import { describeWithDatabase } from "./support/suite.ts";

/** Keep equal to SUPABASE_CLI_VERSION in .ci/run (and tests/supabase_cli_test.ts). */
const SUPABASE_CLI_VERSION = "3.1.0";
const LAUNCHER = new URL(
  `../.cache/supabase-cli-${SUPABASE_CLI_VERSION}/node_modules/.bin/supabase`,
  import.meta.url,
).pathname;

/** The key the CLI prints, or why it could not run. */
async function generateWithCli(): Promise<{ key: string } | { missing: string }> {
  const dir = await Deno.makeTempDir({ prefix: "supabase-signing-key-" });
  try {
    const output = await new Deno.Command(LAUNCHER, {
      args: ["gen", "signing-key", "--algorithm", "ES256"],
      cwd: dir,
      clearEnv: true,
      env: {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        HOME: dir,
        NO_COLOR: "1",
        SUPABASE_TELEMETRY_DISABLED: "1",
        DO_NOT_TRACK: "1",
        SUPABASE_NO_UPDATE_NOTIFIER: "1",
      },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const lines = new TextDecoder().decode(output.stdout).split("\n");
    const key = lines.find((line) => line.startsWith("{"));
    if (!output.success || key === undefined) return { missing: "supabase gen signing-key failed" };
    return { key };
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    return { missing: `${LAUNCHER} is missing` };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** The app served on a loopback port, as supabase-js and jose reach the local server. */
async function served(app: TestApp, work: (base: string) => Promise<void>): Promise<void> {
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    atEdge(app.app.handler, app.config.clientIp),
  );
  await work(`http://127.0.0.1:${server.addr.port}`);
}

const generated = await generateWithCli();
const inCi = Deno.env.get("CI") === "true";

if ("missing" in generated) {
  if (inCi) {
    Deno.test("the Supabase CLI generates the signing key", () => assert.fail(generated.missing));
  } else {
    console.warn(`tests/signing_key_tools_test.ts skipped: ${generated.missing}.`);
  }
} else {
  const cliKey = JSON.parse(generated.key);

  describeWithDatabase("a session signed with the Supabase CLI's key, verified by real tools", {
    "the CLI's key is the format the service reads, and the session names its kid"(app) {
      assert.deepEqual(
        Object.keys(cliKey).sort(),
        ["alg", "crv", "d", "ext", "key_ops", "kid", "kty", "use", "x", "y"],
      );
      assert.equal(cliKey.alg, "ES256");
      const signing = app.config.sessionKeys.signing;
      assert.ok(signing.alg === "ES256" && signing.kid === cliKey.kid);
      return Promise.resolve();
    },

    async "jose's createRemoteJWKSet verifies the session against the published JWKS"(app) {
      const session = await signIn(app);
      assert.deepEqual(decodeProtectedHeader(session.accessToken), {
        alg: "ES256",
        kid: cliKey.kid,
        typ: "JWT",
      });
      await served(app, async (base) => {
        const discovery = await fetch(
          `${base}/functions/v1/wallet-proof/.well-known/openid-configuration`,
        );
        assert.equal(discovery.headers.get("cache-control"), "public, max-age=300");
        const { issuer, jwks_uri } = await discovery.json();
        assert.equal(issuer, app.config.sessionKeys.issuer);
        assert.equal(jwks_uri, `${base}/functions/v1/wallet-proof/.well-known/jwks.json`);
        const jwks = createRemoteJWKSet(new URL(jwks_uri));
        const { payload } = await jwtVerify(session.accessToken, jwks, {
          issuer,
          audience: "authenticated",
          algorithms: ["ES256"],
        });
        assert.equal(payload.sub, session.userId);
        assert.equal(payload.role, "authenticated");
        const forged = await strangerSigner(app.config).issue({
          userId: session.userId,
          sessionId: String(payload.session_id),
          walletAddress: session.account.address,
        });
        await assert.rejects(jwtVerify(forged.accessToken, jwks, { algorithms: ["ES256"] }));
      });
    },

    async "the JWKS answer holds the public key alone, at both URLs"(app) {
      await served(app, async (base) => {
        for (
          const path of [
            "/functions/v1/wallet-proof/.well-known/jwks.json",
            "/auth/v1/.well-known/jwks.json",
          ]
        ) {
          const response = await fetch(`${base}${path}`, {
            headers: { origin: "https://verifier.example" },
          });
          assert.equal(response.status, 200);
          assert.equal(response.headers.get("cache-control"), "public, max-age=300");
          assert.equal(response.headers.get("access-control-allow-origin"), "*");
          const text = await response.text();
          assert.ok(!text.includes(cliKey.d), "the private key was answered");
          const { keys } = JSON.parse(text);
          assert.deepEqual(keys, [{
            kid: cliKey.kid,
            alg: "ES256",
            use: "sig",
            key_ops: ["verify"],
            kty: "EC",
            crv: "P-256",
            x: cliKey.x,
            y: cliKey.y,
          }]);
        }
      });
    },

    async "supabase-js's auth.getClaims verifies the session through /auth/v1/.well-known/jwks.json"(
      app,
    ) {
      const session = await signIn(app);
      await served(app, async (base) => {
        const supabase = createClient(base, LOCAL_ANON_KEY, {
          auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
        });
        const { data, error } = await supabase.auth.getClaims(session.accessToken);
        assert.equal(error, null);
        assert.equal(data?.claims.sub, session.userId);
        assert.equal(data?.header.kid, cliKey.kid);
        // A stranger's signature under our kid: getClaims refuses it.
        const forged = await strangerSigner(app.config).issue({
          userId: session.userId,
          sessionId: crypto.randomUUID(),
          walletAddress: session.account.address,
        });
        const refused = await supabase.auth.getClaims(forged.accessToken);
        assert.ok(refused.error !== null);
      });
    },

    async "the package's createSessionCheck verifies locally and refetches unknown kids at a bounded rate"(
      app,
    ) {
      const session = await signIn(app);
      await served(app, async (base) => {
        let fetches = 0;
        let now = Date.now();
        const check = createSessionCheck({
          jwksUrl: `${base}/functions/v1/wallet-proof/.well-known/jwks.json`,
          issuer: app.config.sessionKeys.issuer,
          fetch: (input, init) => {
            fetches++;
            return fetch(input, init);
          },
          now: () => now,
        });
        const checked = await check(session.accessToken);
        assert.equal(checked.userId, session.userId);
        assert.equal(checked.walletAddress, session.account.address);
        assert.equal(fetches, 1);
        await check(session.accessToken);
        assert.equal(fetches, 1, "the keys are cached");
        // Forged tokens naming kids nobody published: refused, and no fetch each.
        for (let i = 0; i < 20; i++) {
          const [, payload, signature] = session.accessToken.split(".");
          const header = btoa(JSON.stringify({ alg: "ES256", kid: crypto.randomUUID() }))
            .replaceAll("=", "").replaceAll("+", "-").replaceAll("/", "_");
          await assert.rejects(
            check(`${header}.${payload}.${signature}`),
            (error) => error instanceof VaultError && error.code === "invalid_token",
          );
        }
        assert.equal(fetches, 1, "unknown kids are not fetched again within the bound");
        now += 31_000;
        await assert.rejects(
          check(
            `${btoa(JSON.stringify({ alg: "ES256", kid: "rotated-in" })).replaceAll("=", "")}.${
              session.accessToken.split(".")[1]
            }.${session.accessToken.split(".")[2]}`,
          ),
        );
        assert.equal(fetches, 2, "after the bound, an unknown kid fetches the keys once more");
        const forged = await strangerSigner(app.config).issue({
          userId: session.userId,
          sessionId: checked.sessionId,
          walletAddress: session.account.address,
        });
        await assert.rejects(
          check(forged.accessToken),
          (error) => error instanceof VaultError && error.code === "invalid_token",
        );
        now = (checked.expiresAt + 1) * 1000;
        await assert.rejects(
          check(session.accessToken),
          (error) => error instanceof VaultError && error.code === "token_expired",
        );
      });
    },
  }, { JWT_SIGNING_KEYS: generated.key });
}
