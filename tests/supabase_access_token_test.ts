/**
 * supabase-js the easy way: the browser client's `accessToken` is what supabase-js's `accessToken`
 * option wants, so `functions.invoke` carries the vault session with no header per call, refreshed
 * when it is due; and `vaultErrorFrom` turns an invoke error into the service's code. Against the
 * local app on a real port (supabase-js calls /functions/v1/<name> on it, as on Supabase).
 */
import assert from "node:assert/strict";
import { createClient, type SupabaseClient } from "@supabase/supabase-js";
import { atEdge, LOCAL_ANON_KEY } from "../server/app.ts";
import { createVaultClient, memoryStorage, type VaultClient } from "../sdk/src/browser.ts";
import { VaultError } from "../sdk/src/errors.ts";
import { vaultErrorFrom } from "../sdk/src/supabase.ts";
import { bearer, newWallet, type TestApp } from "./support/app.ts";
import { describeWithDatabase } from "./support/suite.ts";

interface Setup {
  readonly vault: VaultClient;
  readonly supabase: SupabaseClient;
  /** The Authorization header of each call supabase-js made, in order. */
  readonly sent: (string | null)[];
  /** Moves the vault client's clock (its access token's expiry is read against it). */
  advance(seconds: number): void;
}

async function withVaultAndSupabase(
  app: TestApp,
  work: (setup: Setup) => Promise<void>,
): Promise<void> {
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    atEdge(app.app.handler, app.config.clientIp),
  );
  const origin = `http://127.0.0.1:${server.addr.port}`;
  let offsetMs = 0;
  const vault = createVaultClient({
    baseUrl: `${origin}/api`,
    storage: memoryStorage(),
    now: () => Date.now() + offsetMs,
  });
  const sent: (string | null)[] = [];
  const supabase = createClient(origin, LOCAL_ANON_KEY, {
    accessToken: vault.accessToken,
    global: {
      fetch: (input, init) => {
        sent.push(new Headers(init?.headers).get("authorization"));
        return fetch(input, init);
      },
    },
  });
  await work({ vault, supabase, sent, advance: (s) => void (offsetMs += s * 1000) });
}

/** A wallet's sign-in through the client's two halves, as a wallet kit does it. */
async function signIn(vault: VaultClient) {
  const account = newWallet();
  const { message } = await vault.signInMessage({ address: account.address, chainId: 1 });
  return await vault.signInWithSignature({
    message,
    signature: await account.signMessage({ message }),
  });
}

describeWithDatabase("supabase-js with the browser client's accessToken", {
  async "functions.invoke saves and lists a key with no per-call header"(app) {
    await withVaultAndSupabase(app, async ({ vault, supabase, sent }) => {
      const session = await signIn(vault);
      const value = `sk-supabase-${crypto.randomUUID()}`;
      const saved = await supabase.functions.invoke("user-secrets", {
        method: "PUT",
        body: { secretType: "provider_d_key", value },
      });
      assert.equal(saved.error, null);
      assert.equal(saved.data.created, true);
      const listed = await supabase.functions.invoke("user-secrets", { method: "GET" });
      assert.equal(listed.error, null);
      assert.deepEqual(
        listed.data.secrets.map((s: { secretType: string }) => s.secretType),
        ["provider_d_key"],
      );
      assert.ok(!JSON.stringify(listed.data).includes(value));
      assert.deepEqual(sent, [`Bearer ${session.accessToken}`, `Bearer ${session.accessToken}`]);
    });
  },

  async "an access token about to expire is refreshed before supabase-js sends it"(app) {
    await withVaultAndSupabase(app, async ({ vault, supabase, sent, advance }) => {
      const first = await signIn(vault);
      const expiresIn = first.expiresAt - Math.floor(Date.now() / 1000);
      advance(expiresIn - 30); // within the client's one-minute margin
      const { data, error } = await supabase.functions.invoke("user-secrets", { method: "GET" });
      assert.equal(error, null);
      assert.equal(data.configured, true);
      const next = await vault.getSession();
      assert.ok(next !== null);
      assert.notEqual(next.refreshToken, first.refreshToken, "the session was rotated");
      assert.deepEqual(sent, [`Bearer ${next.accessToken}`]);
      // The call was made with the creator's session (the anonymous answer lists none).
      const check = await app.fetch("/api/secrets", { headers: bearer(next.accessToken) });
      assert.equal(check.status, 200);
      await check.body?.cancel();
    });
  },

  async "signed out, accessToken is null and supabase-js sends no session"(app) {
    await withVaultAndSupabase(app, async ({ vault, supabase, sent }) => {
      assert.equal(await vault.accessToken(), null);
      const { data, error } = await supabase.functions.invoke("user-secrets", { method: "GET" });
      assert.equal(error, null);
      assert.deepEqual(data.secrets, []);
      // A publishable key is not sent as a bearer token to functions (supabase-js's own rule).
      assert.deepEqual(sent, [null]);
      const write = await supabase.functions.invoke("user-secrets", {
        method: "PUT",
        body: { secretType: "provider_d_key", value: "sk-x-0123456789" },
      });
      const failure = await vaultErrorFrom(write.error);
      assert.ok(failure instanceof VaultError);
      assert.equal(failure.code, "missing_token");
      assert.equal(failure.status, 401);
    });
  },
});

describeWithDatabase("vaultErrorFrom", {
  async "gives the service's code, message, status and details of a FunctionsHttpError"(app) {
    await withVaultAndSupabase(app, async ({ vault, supabase }) => {
      await signIn(vault);
      const { error } = await supabase.functions.invoke("user-secrets", {
        method: "PUT",
        body: { secretType: "not_a_type", value: "x" },
      });
      assert.equal(error?.name, "FunctionsHttpError");
      const failure = await vaultErrorFrom(error);
      assert.ok(failure instanceof VaultError);
      assert.equal(failure.code, "invalid_secret_type");
      assert.equal(failure.status, 400);
      assert.equal(typeof failure.message, "string");
      assert.equal(await vaultErrorFrom(null), null);
    });
  },

  async "gives the code of a refresh the service refused, thrown by accessToken inside supabase-js"(
    app,
  ) {
    await withVaultAndSupabase(app, async ({ vault, supabase, advance }) => {
      const session = await signIn(vault);
      // The creator signed out everywhere from another device.
      const logout = await app.fetch("/api/auth/logout", {
        method: "POST",
        headers: bearer(session.accessToken, { "content-type": "application/json" }),
        body: JSON.stringify({ scope: "global" }),
      });
      assert.equal(logout.status, 204);
      advance(session.expiresAt - Math.floor(Date.now() / 1000));
      const { error } = await supabase.functions.invoke("user-secrets", { method: "GET" });
      assert.equal(error?.name, "FunctionsFetchError");
      const failure = await vaultErrorFrom(error);
      assert.ok(failure instanceof VaultError);
      assert.equal(failure.code, "session_revoked");
      assert.equal(await vault.getSession(), null, "the ended session is forgotten");
    });
  },
});

Deno.test("vaultErrorFrom: a function that could not be reached is network_error; a non-service body is invalid_response", async () => {
  const unreachable = createClient("http://127.0.0.1:9", LOCAL_ANON_KEY);
  const { error } = await unreachable.functions.invoke("user-secrets", { method: "GET" });
  assert.equal((await vaultErrorFrom(error))?.code, "network_error");

  const notService = Object.assign(new Error("Edge Function returned a non-2xx status code"), {
    name: "FunctionsHttpError",
    context: new Response("<html>bad gateway</html>", { status: 502 }),
  });
  const failure = await vaultErrorFrom(notService);
  assert.equal(failure?.code, "invalid_response");
  assert.equal(failure?.status, 502);
  assert.ok(!failure?.message.includes("bad gateway"), "the body is not quoted");
});
