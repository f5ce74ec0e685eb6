/**
 * The /api proxy: GET /api/secrets is answered by the user-secrets function, both when the local
 * server dispatches in-process and when the proxy reaches the functions over HTTP, as deployed.
 */
import assert from "node:assert/strict";
import { createApiHandler, fetchInvoker } from "../functions/api/handler.ts";
import { serve } from "../functions/_shared/http.ts";
import { silentLogger } from "../functions/_shared/log.ts";
import { SECRET_TYPES } from "../functions/_shared/secret-types.ts";
import type { TestApp } from "./support/app.ts";
import { describeWithDatabase } from "./support/suite.ts";

function expectedStatus(app: TestApp) {
  return {
    configured: true,
    project: "wallet-vault-test",
    storage: `${app.engine}:public.user_secrets`,
    secretTypes: [...SECRET_TYPES],
    secrets: [],
  };
}

describeWithDatabase("the /api proxy", {
  async "GET /api/secrets without a token returns configuration status only"(app) {
    const response = await app.fetch("/api/secrets");
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), expectedStatus(app));
  },

  async "the function itself answers the same at its own URL"(app) {
    const response = await app.fetch("/functions/v1/user-secrets");
    assert.deepEqual(await response.json(), expectedStatus(app));
  },

  async "deployed, the proxy reaches the function over HTTP with the same answer"(app) {
    await using functions = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      app.app.handler,
    );
    const functionsUrl = `http://127.0.0.1:${functions.addr.port}/functions/v1`;
    const proxy = serve(
      createApiHandler(fetchInvoker(functionsUrl)),
      { allowedOrigins: [] },
      silentLogger,
    );
    const response = await proxy(
      new Request("https://project.supabase.co/functions/v1/api/secrets"),
    );
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), expectedStatus(app));
    const missing = await proxy(
      new Request("https://project.supabase.co/functions/v1/api/unknown"),
    );
    assert.equal(missing.status, 404);
    await missing.body?.cancel();
  },
});

Deno.test("the HTTP proxy forwards method, path, query, headers and body, and drops hop-by-hop headers", async () => {
  const seen: { url: string; method: string; headers: Headers; body: string }[] = [];
  await using upstream = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      seen.push({
        url: request.url,
        method: request.method,
        headers: request.headers,
        body: await request.text(),
      });
      return new Response(JSON.stringify({ ok: true }), {
        status: 201,
        headers: { "content-type": "application/json", "x-upstream": "yes" },
      });
    },
  );
  const invoker = fetchInvoker(`http://127.0.0.1:${upstream.addr.port}/functions/v1`, {
    anonKey: "anon-key",
  });
  const proxy = createApiHandler(invoker);
  const response = await proxy(
    new Request("https://project.supabase.co/functions/v1/api/secrets?x=1", {
      method: "PUT",
      headers: {
        authorization: "Bearer token-1",
        "content-type": "application/json",
        connection: "keep-alive, x-drop-me",
        "x-drop-me": "1",
        "proxy-authorization": "Basic abc",
        "x-client-info": "test",
      },
      body: JSON.stringify({ secretType: "provider_b_key" }),
    }),
  );
  assert.equal(response.status, 201);
  assert.equal(response.headers.get("x-upstream"), "yes");
  assert.deepEqual(await response.json(), { ok: true });
  const [request] = seen;
  assert.equal(
    new URL(request.url).pathname + new URL(request.url).search,
    "/functions/v1/user-secrets?x=1",
  );
  assert.equal(request.method, "PUT");
  assert.equal(request.body, JSON.stringify({ secretType: "provider_b_key" }));
  assert.equal(request.headers.get("authorization"), "Bearer token-1");
  assert.equal(request.headers.get("x-client-info"), "test");
  assert.equal(request.headers.get("apikey"), "anon-key");
  assert.equal(request.headers.get("x-drop-me"), null);
  assert.equal(request.headers.get("proxy-authorization"), null);
});

Deno.test("an unreachable function is a 502 upstream_unavailable", async () => {
  const proxy = serve(createApiHandler(fetchInvoker("http://127.0.0.1:9/functions/v1")), {
    allowedOrigins: [],
  }, silentLogger);
  const response = await proxy(new Request("https://project.supabase.co/functions/v1/api/secrets"));
  assert.equal(response.status, 502);
  assert.equal((await response.json()).error.code, "upstream_unavailable");
});
