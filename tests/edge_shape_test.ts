/**
 * The deployed shape, end to end: every function in its own process with the edge runtime's
 * permissions (`--allow-net --allow-env` only) and only Supabase's environment plus the function
 * secrets, APP_ENV=production, two instances each behind a round-robin gateway, and Postgres
 * reached through PgBouncer in transaction mode with fewer server connections than clients.
 * Through that gateway: the full sign-in, the vault, reveal, a replay race across instances, and
 * supabase-js with and without a session.
 */
import assert from "node:assert/strict";
import { createClient, FunctionsHttpError } from "@supabase/supabase-js";
import { hashMessage } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { generateDevKeys } from "../server/dev-keys.ts";
import { openTestDatabase } from "./support/database.ts";
import { signingKey } from "./support/config-env.ts";
import { decodeProtectedHeader } from "jose";
import {
  edgeClient,
  type EdgeShape,
  randomSecret,
  startEdgeShape,
  supabaseProvidedEnv,
  supabaseShapedKey,
} from "./support/edge.ts";
import { findPgBouncer, startPgBouncer } from "./support/pgbouncer.ts";
import { startWalletRpcStandIn } from "./support/wallet-rpc-stand-in.ts";

const ORIGIN = "https://app.example.com";
const lookup = await findPgBouncer();
if ("missing" in lookup) console.warn(`skipping the edge-shape tests: ${lookup.missing}`);

const client = (edge: EdgeShape) => edgeClient(edge, ORIGIN);

Deno.test({
  name: "the functions as Supabase hosts them",
  ignore: "missing" in lookup,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    if (!("found" in lookup)) return;
    const database = await openTestDatabase("postgres");
    const pooler = await startPgBouncer(lookup.found, { poolSize: 2 });
    const serverRevealToken = randomSecret(32);
    const dbName = new URL(database.url!).pathname.slice(1);
    const provided = supabaseProvidedEnv("https://edgeshape.supabase.co", database.url!);
    const { publishableKey } = provided;
    const anonKey = provided.env.SUPABASE_ANON_KEY;
    const env = {
      ...provided.env,
      // The function secrets a deployer sets (`supabase secrets set`).
      APP_ENV: "production",
      DATABASE_URL: pooler.urlFor(dbName),
      ENCRYPTION_KEYS: `k1:${randomSecret(32)}`,
      SERVER_REVEAL_TOKEN: serverRevealToken,
      // The asymmetric mode, as production runs it: a key in the Supabase CLI's format.
      JWT_SIGNING_KEYS: JSON.stringify(signingKey()),
      ALLOWED_ORIGINS: ORIGIN,
      RATE_LIMIT_NONCE_PER_MINUTE: "1000",
      RATE_LIMIT_PROOF_PER_MINUTE: "1000",
    };
    const edge = await startEdgeShape({ env });
    const call = client(edge);
    const secretValues: string[] = [];

    async function signIn(
      prefix: string,
      account = privateKeyToAccount(generatePrivateKey()),
      via = call,
    ) {
      const nonce = await via(`${prefix}/nonce`, {
        method: "POST",
        body: { address: account.address, chainId: 1 },
      });
      assert.equal(nonce.status, 200, JSON.stringify(nonce.body));
      const message = nonce.body.message as string;
      const signature = await account.signMessage({ message });
      const proof = await via(
        prefix === "/functions/v1/api/auth" ? `${prefix}/wallet-proof` : `${prefix}`,
        {
          method: "POST",
          body: { message, signature },
        },
      );
      assert.equal(proof.status, 200, JSON.stringify(proof.body));
      const header = decodeProtectedHeader(proof.body.access_token as string);
      assert.deepEqual(header, {
        alg: "ES256",
        kid: JSON.parse(env.JWT_SIGNING_KEYS).kid,
        typ: "JWT",
      });
      return proof.body as { access_token: string; refresh_token: string; user: { id: string } };
    }

    try {
      await t.step("each function runs with only --allow-net --allow-env, twice", () => {
        for (const ports of Object.values(edge.instances)) assert.equal(ports.length, 2);
      });

      for (
        const [label, auth, secrets] of [
          ["the api function", "/functions/v1/api/auth", "/functions/v1/api/secrets"],
          ["the functions' own URLs", "/functions/v1/wallet-proof", "/functions/v1/user-secrets"],
        ] as const
      ) {
        await t.step(
          `${label}: sign in, save, list, reveal, delete, refresh, sign out`,
          async () => {
            const nonceRoute = auth;
            const session = await signIn(nonceRoute);
            const value = `sk-edge-${crypto.randomUUID()}`;
            secretValues.push(value);

            const saved = await call(secrets, {
              method: "PUT",
              token: session.access_token,
              body: { secretType: "provider_b_key", value },
            });
            assert.equal(saved.status, 200, JSON.stringify(saved.body));
            assert.equal(saved.body.created, true);

            const listed = await call(secrets, { token: session.access_token });
            assert.equal(listed.status, 200);
            assert.deepEqual(
              (listed.body.secrets as { secretType: string }[]).map((s) => s.secretType),
              ["provider_b_key"],
            );
            assert.ok(!JSON.stringify(listed.body).includes(value));
            assert.equal(listed.body.storage, "postgres:public.user_secrets");

            const revealed = await call(`${secrets}/reveal`, {
              method: "POST",
              token: session.access_token,
              serverToken: serverRevealToken,
              body: { secretTypes: ["provider_b_key"] },
            });
            assert.equal(revealed.status, 200, JSON.stringify(revealed.body));
            assert.equal((revealed.body.secrets as { value: string }[])[0].value, value);

            const withoutServerToken = await call(`${secrets}/reveal`, {
              method: "POST",
              token: session.access_token,
              body: { secretTypes: ["provider_b_key"] },
            });
            assert.equal(withoutServerToken.status, 403);

            const deleted = await call(secrets, {
              method: "DELETE",
              token: session.access_token,
              body: { secretType: "provider_b_key" },
            });
            assert.deepEqual(deleted.body, { secretType: "provider_b_key", deleted: true });

            const refreshed = await call(`${auth}/refresh`, {
              method: "POST",
              body: { refresh_token: session.refresh_token },
            });
            assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
            const next = refreshed.body as { access_token: string };

            const loggedOut = await call(`${auth}/logout`, {
              method: "POST",
              token: next.access_token,
            });
            assert.equal(loggedOut.status, 204);
            const after = await call(secrets, { token: next.access_token });
            assert.equal(after.status, 401);
            assert.equal((after.body.error as { code: string }).code, "session_revoked");
          },
        );
      }

      await t.step(
        "one signed nonce raced across every instance signs in exactly once",
        async () => {
          const account = privateKeyToAccount(generatePrivateKey());
          const nonce = await call("/functions/v1/api/auth/nonce", {
            method: "POST",
            body: { address: account.address, chainId: 1 },
          });
          const message = nonce.body.message as string;
          const signature = await account.signMessage({ message });
          // Half through the api function's instances, half through wallet-proof's.
          const attempts = await Promise.all(
            Array.from({ length: 8 }, (_, i) =>
              call(
                i % 2 === 0 ? "/functions/v1/api/auth/wallet-proof" : "/functions/v1/wallet-proof",
                {
                  method: "POST",
                  body: { message, signature },
                },
              )),
          );
          const statuses = attempts.map((attempt) => attempt.status).sort();
          assert.deepEqual(statuses, [200, 401, 401, 401, 401, 401, 401, 401]);
          for (const attempt of attempts.filter((a) => a.status === 401)) {
            assert.equal((attempt.body.error as { code: string }).code, "nonce_used");
          }
        },
      );

      await t.step(
        "supabase-js with the publishable key and no session gets the status view",
        async () => {
          for (const key of [publishableKey, anonKey]) {
            const supabase = createClient(edge.url, key, {
              auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
            });
            const status = await supabase.functions.invoke("user-secrets", { method: "GET" });
            assert.equal(status.error, null);
            assert.deepEqual(status.data.secrets, []);
            const viaApi = await supabase.functions.invoke("api/secrets", { method: "GET" });
            assert.equal(viaApi.error, null);
            assert.equal(viaApi.data.configured, true);
            const logout = await supabase.functions.invoke("wallet-proof/logout", {
              method: "POST",
            });
            assert.ok(logout.error instanceof FunctionsHttpError);
            const answer = await (logout.error.context as Response).json();
            assert.equal(answer.error.code, "missing_token");
          }
        },
      );

      await t.step(
        "a bearer that merely looks like a publishable key is a failed token",
        async () => {
          const lookalike = await call("/functions/v1/user-secrets", {
            token: supabaseShapedKey("sb_publishable_"),
          });
          assert.equal(lookalike.status, 401);
          assert.equal((lookalike.body.error as { code: string }).code, "invalid_token");
        },
      );

      await t.step(
        "supabase-js with a session saves and lists through functions.invoke",
        async () => {
          const session = await signIn("/functions/v1/wallet-proof");
          const supabase = createClient(edge.url, publishableKey, {
            auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
          });
          const headers = { authorization: `Bearer ${session.access_token}` };
          const value = `sk-edge-js-${crypto.randomUUID()}`;
          secretValues.push(value);
          const saved = await supabase.functions.invoke("user-secrets", {
            method: "PUT",
            headers,
            body: { secretType: "provider_c_key", value },
          });
          assert.equal(saved.error, null);
          const listed = await supabase.functions.invoke("api/secrets", { method: "GET", headers });
          assert.deepEqual(
            listed.data.secrets.map((s: { secretType: string }) => s.secretType),
            ["provider_c_key"],
          );
        },
      );

      await t.step(
        "a Host that makes no URL is a 400 JSON error at the function itself",
        async () => {
          const conn = await Deno.connect({
            hostname: "127.0.0.1",
            port: edge.instances["user-secrets"][0],
          });
          try {
            await conn.write(new TextEncoder().encode(
              "PUT /user-secrets HTTP/1.1\r\nHost: a b\r\nContent-Type: application/json\r\n" +
                "Content-Length: 2\r\nConnection: close\r\n\r\n{}",
            ));
            let received = "";
            const buffer = new Uint8Array(4096);
            for (let n = await conn.read(buffer); n !== null; n = await conn.read(buffer)) {
              received += new TextDecoder().decode(buffer.subarray(0, n));
            }
            assert.match(received, /^HTTP\/1\.1 400 /);
            assert.match(received, /"code":"invalid_request"/);
          } finally {
            conn.close();
          }
        },
      );

      await t.step(
        "a function whose APP_ENV is left unset runs as production: development keys are refused",
        async () => {
          // A deployer who forgets APP_ENV and ALLOWED_ORIGINS, with keys copied from a laptop.
          const { APP_ENV: _, ALLOWED_ORIGINS: __, ENCRYPTION_KEYS: ___, ...forgetful } = env;
          const devKeys = generateDevKeys();
          const ask = async (appEnv: Record<string, string>) => {
            const shape = await startEdgeShape({
              env: { ...forgetful, ...devKeys, ...appEnv },
              functions: ["user-secrets"],
              instancesPerFunction: 1,
            });
            try {
              const answer = await client(shape)("/functions/v1/user-secrets");
              return { ...answer, logs: shape.output() };
            } finally {
              await shape.stop();
            }
          };
          const unset = await ask({});
          assert.equal(unset.status, 500);
          assert.equal((unset.body.error as { code: string }).code, "not_configured");
          assert.match(unset.logs, /APP_ENV=production requires ALLOWED_ORIGINS/);
          assert.match(unset.logs, /development/);
          for (const secret of Object.values(devKeys)) {
            assert.ok(!unset.logs.includes(secret), "a refused key reached the logs");
          }
          // Development asked for by name, in a hosted project: refused too (it would skip every
          // production check); against a local stack's URL, as `supabase functions serve` gives
          // one, the same settings start and answer.
          const hosted = await ask({ APP_ENV: "development" });
          assert.equal(hosted.status, 500);
          assert.match(hosted.logs, /APP_ENV=development runs only against a local stack/);
          assert.match(hosted.logs, /SUPABASE_URL is not local/);
          const named = await ask({ APP_ENV: "development", SUPABASE_URL: "http://kong:8000" });
          assert.equal(named.status, 200, JSON.stringify(named.body));
          assert.equal(named.body.configured, true);
        },
      );

      /** The function started with `databaseUrl` answers 500 not_configured; its logs. */
      const refusedDatabaseUrl = async (databaseUrl: string) => {
        const shape = await startEdgeShape({
          env: { ...env, DATABASE_URL: databaseUrl },
          functions: ["user-secrets"],
          instancesPerFunction: 1,
        });
        try {
          const answer = await client(shape)("/functions/v1/user-secrets");
          assert.equal(answer.status, 500);
          assert.equal((answer.body.error as { code: string }).code, "not_configured");
          return shape.output();
        } finally {
          await shape.stop();
        }
      };

      await t.step(
        "a database URL that does not parse: the function answers not_configured, its password unlogged",
        async () => {
          // A password with an unencoded #: the URL parser (and the driver) quote such a URL whole.
          const password = `p4ss#${randomSecret(12).replace(/[+/=]/g, "")}`;
          const logs = await refusedDatabaseUrl(
            `postgres://svc:${password}@db.example.com:6543/vault`,
          );
          assert.match(logs, /DATABASE_URL is not a valid URL/);
          assert.ok(!logs.includes(password.slice(5)), "the database password reached the logs");
        },
      );

      await t.step(
        "a database URL option the driver refuses: the function answers not_configured, not a crash",
        async () => {
          // Parsed and accepted by the configuration; postgres.js throws on it at pool creation.
          const password = randomSecret(12).replace(/[+/=]/g, "");
          const logs = await refusedDatabaseUrl(
            `postgres://svc:${password}@db.example.com:6543/vault?target_session_attrs=any`,
          );
          assert.match(logs, /the function could not start: Error/);
          assert.ok(!logs.includes(password), "the database password reached the logs");
        },
      );

      await t.step(
        "without Uint8Array's hex and base64 codecs (a runtime older than V8 14): sign in, save, list, reveal, refresh",
        async () => {
          const shape = await startEdgeShape({
            env,
            functions: ["api"],
            instancesPerFunction: 1,
            preload: new URL("./support/without-native-codecs.ts", import.meta.url),
          });
          try {
            const older = client(shape);
            const session = await signIn("/functions/v1/api/auth", undefined, older);
            const value = `sk-older-runtime-${crypto.randomUUID()}`;
            secretValues.push(value);
            const saved = await older("/functions/v1/api/secrets", {
              method: "PUT",
              token: session.access_token,
              body: { secretType: "provider_c_key", value },
            });
            assert.equal(saved.status, 200, JSON.stringify(saved.body));
            const listed = await older("/functions/v1/api/secrets", {
              token: session.access_token,
            });
            assert.equal(listed.status, 200, JSON.stringify(listed.body));
            /** provider_c_key's value, revealed through `via` with `token`. */
            const revealedValue = async (via: typeof call, token: string) => {
              const revealed = await via("/functions/v1/api/secrets/reveal", {
                method: "POST",
                token,
                serverToken: serverRevealToken,
                body: { secretTypes: ["provider_c_key"] },
              });
              assert.equal(revealed.status, 200, JSON.stringify(revealed.body));
              return (revealed.body.secrets as { value: string }[]).map((secret) => secret.value);
            };
            assert.deepEqual(await revealedValue(older, session.access_token), [value]);
            const refreshed = await older("/functions/v1/api/auth/refresh", {
              method: "POST",
              body: { refresh_token: session.refresh_token, retryKey: crypto.randomUUID() },
            });
            assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
            // Stored through the older runtime's hex, revealed by a current one: the same bytes.
            const currentToken = refreshed.body.access_token as string;
            assert.deepEqual(await revealedValue(call, currentToken), [value]);
            const logs = shape.output();
            for (
              const secret of [
                value,
                serverRevealToken,
                JSON.parse(env.JWT_SIGNING_KEYS).d,
                session.refresh_token,
              ]
            ) {
              assert.ok(!logs.includes(secret), "a secret reached the logs");
            }
          } finally {
            await shape.stop();
          }
        },
      );

      await t.step(
        "creator controls: lock, the live run refused, unlock with a signature, sign the other device out, delete the account",
        async () => {
          const account = privateKeyToAccount(generatePrivateKey());
          const session = await signIn("/functions/v1/api/auth", account);
          const otherDevice = await signIn("/functions/v1/wallet-proof", account);
          const token = session.access_token;
          const value = `sk-edge-controls-${crypto.randomUUID()}`;
          secretValues.push(value);
          const saved = await call("/functions/v1/api/secrets", {
            method: "PUT",
            token,
            body: { secretType: "provider_d_key", value },
          });
          assert.equal(saved.status, 200, JSON.stringify(saved.body));
          /** The provider_d_key reveal through `path`, as a live run sends it. */
          const reveal = (path: string) =>
            call(path, {
              method: "POST",
              token,
              serverToken: serverRevealToken,
              body: { secretTypes: ["provider_d_key"] },
            });
          /** A fresh signature for `purpose` (a sign-out's for `sessionIds`), through the api function. */
          const signed = async (purpose: string, sessionIds?: string[]) => {
            const nonce = await call("/functions/v1/api/auth/confirm/nonce", {
              method: "POST",
              token,
              body: sessionIds === undefined ? { purpose } : { purpose, sessionIds },
            });
            assert.equal(nonce.status, 200, JSON.stringify(nonce.body));
            const message = nonce.body.message as string;
            return { message, signature: await account.signMessage({ message }) };
          };

          const locked = await call("/functions/v1/user-secrets/lock", { method: "POST", token });
          assert.equal(locked.status, 200, JSON.stringify(locked.body));
          for (
            const path of ["/functions/v1/api/secrets/reveal", "/functions/v1/user-secrets/reveal"]
          ) {
            const refused = await reveal(path);
            assert.equal(refused.status, 423, JSON.stringify(refused.body));
            assert.equal((refused.body.error as { code: string }).code, "vault_locked");
          }
          const unlocked = await call("/functions/v1/api/secrets/unlock", {
            method: "POST",
            token,
            body: await signed("unlock"),
          });
          assert.deepEqual([unlocked.status, unlocked.body], [200, { locked: false }]);
          const revealed = await reveal("/functions/v1/user-secrets/reveal");
          assert.equal(revealed.status, 200, JSON.stringify(revealed.body));
          assert.equal((revealed.body.secrets as { value: string }[])[0].value, value);

          const listed = await call("/functions/v1/api/secrets", { token });
          const [entry] = listed.body.secrets as { lastUsedAt: string | null }[];
          assert.notEqual(entry.lastUsedAt, null);
          const activity = await call("/functions/v1/user-secrets/activity?limit=3", { token });
          assert.deepEqual(
            (activity.body.events as { kind: string }[]).map((event) => event.kind),
            ["revealed", "unlocked", "reveal_refused"],
          );

          const sessions = await call("/functions/v1/wallet-proof/sessions", { token });
          const other = (sessions.body.sessions as { id: string; current: boolean }[])
            .find((listedSession) => !listedSession.current)!;
          const signedOut = await call("/functions/v1/api/auth/sessions/sign-out", {
            method: "POST",
            token,
            body: { ...await signed("sign_out_sessions", [other.id]), sessionIds: [other.id] },
          });
          assert.deepEqual([signedOut.status, signedOut.body], [200, { signedOut: 1 }]);
          const ended = await call("/functions/v1/api/secrets", {
            token: otherDevice.access_token,
          });
          assert.equal(ended.status, 401);

          const exported = await call("/functions/v1/api/account/export", { token });
          assert.equal(exported.status, 200, JSON.stringify(exported.body));
          assert.ok(!JSON.stringify(exported.body).includes(value));
          const deleted = await call("/functions/v1/api/account", {
            method: "DELETE",
            token,
            body: await signed("delete_account"),
          });
          assert.deepEqual([deleted.status, deleted.body], [200, { deleted: true }]);
          const gone = await call("/functions/v1/api/secrets", { token });
          assert.equal(gone.status, 401);
          const again = await signIn("/functions/v1/api/auth", account);
          assert.notEqual(again.user.id, session.user.id);
          const empty = await call("/functions/v1/api/secrets", { token: again.access_token });
          assert.deepEqual(empty.body.secrets, []);
        },
      );

      await t.step(
        "a contract wallet's proof budget is its chain's own: with two chains behind one RPC stand-in, the same address's wallet on one using its whole budget leaves the owner on the other signing in",
        async () => {
          const [mainnet, base] = [1, 8453];
          // The eleven sign-ins below in one minute's window (every limit counts per minute).
          const intoMinute = (Date.now() / 1000) % 60;
          if (intoMinute > 45) {
            await new Promise((resolve) => setTimeout(resolve, (60 - intoMinute) * 1000 + 500));
          }
          const standIn = await startWalletRpcStandIn([mainnet, base]);
          const shape = await startEdgeShape({
            env: {
              ...env,
              CHAIN_RPC_URLS: standIn.chainRpcUrls,
              // Every request comes from the gateway's one address: the RPC budgets per client
              // are not what this step is about, the wallet's proof budget (default 10) is.
              RATE_LIMIT_RPC_PER_MINUTE: "1000",
              RATE_LIMIT_RPC_PER_ADDRESS_PER_MINUTE: "1000",
              RATE_LIMIT_RPC_PER_ADDRESS_PER_CLIENT_PER_MINUTE: "100",
              // The runtime's own trust store, as a platform's holds the RPC provider's CA.
              DENO_CERT: standIn.caFile,
            },
            functions: ["wallet-proof"],
          });
          try {
            const via = client(shape);
            const [alice, bob] = [0, 1].map(() => privateKeyToAccount(generatePrivateKey()));
            const wallet = privateKeyToAccount(generatePrivateKey()).address;
            standIn.setOwner(mainnet, wallet, alice.address);
            standIn.setOwner(base, wallet, bob.address);
            const signInto = async (chainId: number, owner: typeof alice) => {
              const nonce = await via("/functions/v1/wallet-proof/nonce", {
                method: "POST",
                body: { address: wallet, chainId },
              });
              assert.equal(nonce.status, 200, JSON.stringify(nonce.body));
              const message = nonce.body.message as string;
              // The owner's key signs the EIP-191 hash; the wallet (the stand-in) checks it.
              const signature = await owner.sign({ hash: hashMessage(message) });
              return await via("/functions/v1/wallet-proof", {
                method: "POST",
                body: { message, signature },
              });
            };
            const bobs: string[] = [];
            for (let i = 0; i < 10; i++) {
              const answer = await signInto(base, bob);
              assert.equal(answer.status, 200, JSON.stringify(answer.body));
              bobs.push((answer.body.user as { id: string }).id);
            }
            const over = await signInto(base, bob);
            assert.equal(over.status, 429, JSON.stringify(over.body));
            const alices = await signInto(mainnet, alice);
            assert.equal(alices.status, 200, JSON.stringify(alices.body));
            assert.notEqual((alices.body.user as { id: string }).id, bobs[0]);
            assert.deepEqual([standIn.calls.get(mainnet), standIn.calls.get(base)], [1, 11]);
            const rpcHost = new URL(standIn.chainRpcUrls.split(",")[0].split("=")[1]).host;
            assert.ok(!shape.output().includes(rpcHost), "the RPC's URL reached the logs");
          } finally {
            await shape.stop();
            await standIn.close();
          }
        },
      );

      await t.step(
        "live-run credentials made with the operator's commands: scope, rotation with grace, revocation, expiry, each reveal named",
        async () => {
          /** `deno task credentials:<command>` against the database itself, as an operator runs it. */
          const credentials = async (...args: string[]) => {
            const output = await new Deno.Command(Deno.execPath(), {
              args: [
                "run",
                "--allow-net",
                "--allow-env",
                "--allow-read",
                "--allow-write",
                "--allow-sys",
                new URL("../scripts/credentials.ts", import.meta.url).pathname,
                ...args,
              ],
              env: { DATABASE_URL: database.url! },
              stdout: "piped",
              stderr: "piped",
            }).output();
            const stdout = new TextDecoder().decode(output.stdout).trim();
            const stderr = new TextDecoder().decode(output.stderr);
            assert.equal(output.code, 0, stderr);
            return stdout;
          };
          const session = await signIn("/functions/v1/api/auth");
          const token = session.access_token;
          const values: Record<string, string> = {};
          for (const secretType of ["provider_b_key", "provider_c_key"]) {
            values[secretType] = `sk-edge-credential-${crypto.randomUUID()}`;
            secretValues.push(values[secretType]);
            const saved = await call("/functions/v1/api/secrets", {
              method: "PUT",
              token,
              body: { secretType, value: values[secretType] },
            });
            assert.equal(saved.status, 200, JSON.stringify(saved.body));
          }
          const reveal = (credential: string, secretTypes: string[]) =>
            call("/functions/v1/user-secrets/reveal", {
              method: "POST",
              token,
              serverToken: credential,
              body: { secretTypes },
            });
          const code = (answer: { body: Record<string, unknown> }) =>
            (answer.body.error as { code: string } | undefined)?.code;

          const first = await credentials("add", "image-worker", "--types=provider_b_key");
          secretValues.push(first);
          const inScope = await reveal(first, ["provider_b_key"]);
          assert.equal(inScope.status, 200, JSON.stringify(inScope.body));
          assert.equal(
            (inScope.body.secrets as { value: string }[])[0].value,
            values.provider_b_key,
          );
          const outOfScope = await reveal(first, ["provider_c_key"]);
          assert.deepEqual([outOfScope.status, code(outOfScope)], [403, "reveal_out_of_scope"]);
          assert.ok(!JSON.stringify(outOfScope.body).includes(values.provider_c_key));

          // Rotated mid-run: both work during the grace, only the successor after it.
          const successor = await credentials("rotate", "image-worker", "--grace=2s");
          secretValues.push(successor);
          for (const credential of [first, successor, first]) {
            const during = await reveal(credential, ["provider_b_key"]);
            assert.equal(during.status, 200, JSON.stringify(during.body));
          }
          const listed = JSON.parse(await credentials("list", "--json")) as {
            name: string;
            expiresAt: string | null;
          }[];
          const graceEnds = listed.find((c) => c.name === "image-worker" && c.expiresAt !== null)!;
          while (Date.now() <= Date.parse(graceEnds.expiresAt!) + 1000) {
            await new Promise((resolve) => setTimeout(resolve, 200));
          }
          const afterGrace = await reveal(first, ["provider_b_key"]);
          assert.deepEqual([afterGrace.status, code(afterGrace)], [403, "reveal_forbidden"]);
          assert.equal((await reveal(successor, ["provider_b_key"])).status, 200);

          // Revoked: refused from the next reveal, whichever instance answers it.
          await credentials("revoke", "image-worker");
          for (let i = 0; i < 2; i++) {
            const revoked = await reveal(successor, ["provider_b_key"]);
            assert.deepEqual([revoked.status, code(revoked)], [403, "reveal_forbidden"]);
          }
          const expiring = await credentials(
            "add",
            "batch-worker",
            "--types=provider_c_key",
            "--expires-in=3s",
          );
          secretValues.push(expiring);
          assert.equal((await reveal(expiring, ["provider_c_key"])).status, 200);
          await new Promise((resolve) => setTimeout(resolve, 4000));
          const expired = await reveal(expiring, ["provider_c_key"]);
          assert.deepEqual([expired.status, code(expired)], [403, "reveal_forbidden"]);

          const activity = await call("/functions/v1/user-secrets/activity?limit=20", { token });
          const events = activity.body.events as { kind: string; credential?: string }[];
          assert.deepEqual(
            events.filter((event) => event.kind === "revealed").map((event) => event.credential),
            ["batch-worker", ...Array(5).fill("image-worker")],
          );
          assert.ok(
            events.some((event) =>
              event.kind === "reveal_refused" && event.credential === "image-worker"
            ),
          );
        },
      );

      await t.step("the instances' logs hold no secret value, token or key", () => {
        const logs = edge.output();
        for (
          const secret of [
            ...secretValues,
            serverRevealToken,
            JSON.parse(env.JWT_SIGNING_KEYS).d,
            publishableKey,
          ]
        ) {
          assert.ok(!logs.includes(secret), "a secret reached the logs");
        }
      });
    } finally {
      await edge.stop();
      await pooler.stop();
      await database.close();
    }
  },
});
