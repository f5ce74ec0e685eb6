/**
 * A Supabase frontend calls the function URLs directly with @supabase/supabase-js:
 * `createClient(url, anonKey).functions.invoke("user-secrets", …)` with the wallet session as the
 * bearer token. Against the local server on a real port, which mounts the functions at
 * /functions/v1/<name> exactly as Supabase does.
 */
import assert from "node:assert/strict";
import { createClient, FunctionsHttpError, type SupabaseClient } from "@supabase/supabase-js";
import { atEdge, LOCAL_ANON_KEY } from "../server/app.ts";
import { bearer, signIn, type TestApp } from "./support/app.ts";
import { describeWithDatabase } from "./support/suite.ts";

// supabase-js requires a key; the local server's own, as it prints at start, means "no session".
const ANON_KEY = LOCAL_ANON_KEY;

async function withSupabase(
  app: TestApp,
  work: (supabase: SupabaseClient) => Promise<void>,
): Promise<void> {
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    atEdge(app.app.handler, app.config.clientIp),
  );
  const supabase = createClient(`http://127.0.0.1:${server.addr.port}`, ANON_KEY, {
    auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
  });
  await work(supabase);
}

describeWithDatabase("supabase-js against the local server", {
  async "functions.invoke lists, saves, replaces and deletes secrets with the session token"(app) {
    const { accessToken } = await signIn(app);
    const headers = bearer(accessToken);
    await withSupabase(app, async (supabase) => {
      const empty = await supabase.functions.invoke("user-secrets", { method: "GET", headers });
      assert.equal(empty.error, null);
      assert.equal(empty.data.project, "wallet-vault-test");
      assert.deepEqual(empty.data.secrets, []);

      const value = `sk-supabase-js-${crypto.randomUUID()}`;
      const saved = await supabase.functions.invoke("user-secrets", {
        method: "PUT",
        headers,
        body: { secretType: "provider_b_key", value },
      });
      assert.equal(saved.error, null);
      assert.equal(saved.data.secretType, "provider_b_key");
      assert.equal(saved.data.created, true);
      assert.ok(!JSON.stringify(saved.data).includes(value), "the value is not echoed");

      const replaced = await supabase.functions.invoke("user-secrets", {
        method: "PUT",
        headers,
        body: { secretType: "provider_b_key", value: `${value}-2` },
      });
      assert.equal(replaced.data.created, false);

      const listed = await supabase.functions.invoke("user-secrets", { method: "GET", headers });
      assert.deepEqual(
        listed.data.secrets.map((s: { secretType: string }) => s.secretType),
        ["provider_b_key"],
      );
      assert.ok(!JSON.stringify(listed.data).includes(value));

      const deleted = await supabase.functions.invoke("user-secrets", {
        method: "DELETE",
        headers,
        body: { secretType: "provider_b_key" },
      });
      assert.deepEqual(deleted.data, { secretType: "provider_b_key", deleted: true });
    });
  },

  async "service errors arrive as FunctionsHttpError with the JSON error body"(app) {
    const { accessToken } = await signIn(app);
    await withSupabase(app, async (supabase) => {
      const { data, error } = await supabase.functions.invoke("user-secrets", {
        method: "PUT",
        headers: bearer(accessToken),
        body: { secretType: "not_a_type", value: "x" },
      });
      assert.equal(data, null);
      assert.ok(error instanceof FunctionsHttpError);
      const response = error.context as Response;
      assert.equal(response.status, 400);
      assert.equal((await response.json()).error.code, "invalid_secret_type");
    });
  },

  async "without a session, supabase-js's anon-key bearer gets the anonymous answer, not a 401"(
    app,
  ) {
    await withSupabase(app, async (supabase) => {
      const listed = await supabase.functions.invoke("user-secrets", { method: "GET" });
      assert.equal(listed.error, null);
      assert.deepEqual(listed.data.secrets, []);
      assert.equal(listed.data.providers, undefined);

      const saved = await supabase.functions.invoke("user-secrets", {
        method: "PUT",
        body: { secretType: "provider_b_key", value: `anon-${crypto.randomUUID()}` },
      });
      assert.ok(saved.error instanceof FunctionsHttpError);
      const response = saved.error.context as Response;
      assert.equal(response.status, 401);
      assert.equal((await response.json()).error.code, "missing_token");
    });
  },

  async "the wallet-proof function is reachable the same way: a nonce for the creator's address"(
    app,
  ) {
    await withSupabase(app, async (supabase) => {
      const address = "0x000000000000000000000000000000000000dEaD";
      const { data, error } = await supabase.functions.invoke("wallet-proof/nonce", {
        method: "POST",
        body: { address, chainId: 1 },
      });
      assert.equal(error, null);
      assert.equal(typeof data.nonce, "string");
      assert.ok(data.message.includes(`\n${address}\n`));
    });
  },
});
