/**
 * The /api proxy: it maps the spec's /api paths onto the functions and calls them in its own
 * process, both in the local server and deployed (one invocation per request, no second trip
 * through the gateway), keeping every header the edge delivered.
 */
import assert from "node:assert/strict";
import { createApiHandler, createDeployedApiHandler } from "../functions/api/handler.ts";
import { serve } from "../functions/_shared/http/serve.ts";
import { silentLogger } from "./support/log.ts";
import { SECRET_TYPES } from "../protocol/secret-types.ts";
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

  async "deployed, the api function answers with both handlers in its own process"(app) {
    const proxy = serve(
      createDeployedApiHandler(app.context),
      { allowedOrigins: [] },
      silentLogger,
    );
    const response = await proxy(
      new Request("https://project.supabase.co/functions/v1/api/secrets"),
    );
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), expectedStatus(app));
    const nonce = await proxy(
      new Request("https://project.supabase.co/api/auth/nonce", {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": "10.9.8.7" },
        body: "{}",
      }),
    );
    assert.equal(nonce.status, 200);
    const missing = await proxy(
      new Request("https://project.supabase.co/functions/v1/api/unknown"),
    );
    assert.equal(missing.status, 404);
    await missing.body?.cancel();
  },
});

describeWithDatabase("the /api proxy and the per-IP limit", {
  async "a client naming x-forwarded-for in Connection keeps its own rate-limit bucket"(app) {
    const nonce = (headers: Record<string, string>) =>
      app.fetch("/api/auth/nonce", {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": "10.77.0.1", ...headers },
        body: "{}",
      });
    const limit = app.config.rateLimits.noncePerIpPerMinute;
    for (let i = 0; i < limit; i++) assert.equal((await nonce({})).status, 200);
    const stripped = await nonce({ connection: "x-forwarded-for" });
    assert.equal(stripped.status, 429, "the Connection header moved the client to another bucket");
    await stripped.body?.cancel();
  },
}, { RATE_LIMIT_NONCE_PER_MINUTE: "3" });

Deno.test("the proxy hands the function method, path, query, every header and the body", async () => {
  const seen: { request: Request; path?: string }[] = [];
  const proxy = createApiHandler({
    "user-secrets": (request, path) => {
      seen.push({ request, path });
      return Promise.resolve(new Response(null, { status: 201 }));
    },
  });
  const body = JSON.stringify({ secretType: "provider_b_key" });
  const response = await proxy(
    new Request("https://project.supabase.co/functions/v1/api/secrets?x=1", {
      method: "PUT",
      headers: {
        authorization: "Bearer token-1",
        "content-type": "application/json",
        connection: "keep-alive, x-forwarded-for, authorization",
        "x-forwarded-for": "203.0.113.9",
        "x-client-info": "test",
      },
      body,
    }),
  );
  assert.equal(response.status, 201);
  const [{ request, path }] = seen;
  // The path below the function's name ("" for user-secrets' own root), and the query as sent.
  assert.equal(path, "");
  assert.equal(new URL(request.url).search, "?x=1");
  assert.equal(request.method, "PUT");
  assert.equal(await request.text(), body);
  // Nothing named in Connection is dropped: this is no hop, and the edge set these headers.
  assert.equal(request.headers.get("authorization"), "Bearer token-1");
  assert.equal(request.headers.get("x-forwarded-for"), "203.0.113.9");
  assert.equal(request.headers.get("x-client-info"), "test");
});
