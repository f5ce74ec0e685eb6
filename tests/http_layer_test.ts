/**
 * The HTTP layer every function shares: JSON errors with stable codes, routing, bounded bodies,
 * CORS that never admits the reveal header, and no internals in any response.
 */
import assert from "node:assert/strict";
import { ServiceError } from "../functions/_shared/http/errors.ts";
import {
  MAX_BODY_BYTES,
  MAX_PROOF_BODY_BYTES,
  readJson,
} from "../functions/_shared/http/bodies.ts";
import { json } from "../functions/_shared/http/responses.ts";
import { isConnectionFailure, isDatabaseUnavailable } from "../functions/_shared/db/unavailable.ts";
import { madeOnce, router, subpath } from "../functions/_shared/http/router.ts";
import { CORS_ALLOWED_HEADERS, serve } from "../functions/_shared/http/serve.ts";
import { silentLogger } from "./support/log.ts";
import { describeWithDatabase } from "./support/suite.ts";

async function expectError(response: Response, status: number, code: string) {
  assert.equal(response.status, status);
  assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
  const body = await response.json();
  assert.equal(body.error.code, code);
  assert.equal(typeof body.error.message, "string");
  return body;
}

const jsonPost = (body: BodyInit, contentType = "application/json"): RequestInit => ({
  method: "POST",
  headers: { "content-type": contentType },
  body,
});

describeWithDatabase("the shared HTTP layer", {
  async "an unknown route is a 404 JSON error, under /api and /functions/v1 alike"(app) {
    await expectError(await app.fetch("/api/nope"), 404, "not_found");
    await expectError(await app.fetch("/functions/v1/user-secrets/nope"), 404, "not_found");
    await expectError(await app.fetch("/functions/v1/nope"), 404, "not_found");
    await expectError(await app.fetch("/"), 404, "not_found");
  },

  async "a wrong method is a 405 that lists the allowed ones"(app) {
    const response = await app.fetch("/api/auth/nonce", { method: "GET" });
    await expectError(response, 405, "method_not_allowed");
    assert.equal(response.headers.get("allow"), "POST");
    // HEAD where GET is allowed is listed, and answered (below).
    const patch = await app.fetch("/api/secrets", { method: "PATCH" });
    await expectError(patch, 405, "method_not_allowed");
    assert.equal(patch.headers.get("allow"), "GET, HEAD, PUT, DELETE");
  },

  async "HEAD is answered wherever GET is, as GET (RFC 9110), and refused where it is not"(app) {
    for (const path of ["/api/secrets", "/functions/v1/user-secrets"]) {
      const head = await app.fetch(path, { method: "HEAD" });
      assert.equal(head.status, 200, path);
      assert.match(head.headers.get("content-type")!, /^application\/json/);
      await head.body?.cancel();
    }
    const nonce = await app.fetch("/api/auth/nonce", { method: "HEAD" });
    await expectError(nonce, 405, "method_not_allowed");
    assert.equal(nonce.headers.get("allow"), "POST");
  },

  async "malformed JSON is a 400"(app) {
    await expectError(
      await app.fetch("/api/auth/wallet-proof", jsonPost("{not json")),
      400,
      "invalid_json",
    );
    await expectError(
      await app.fetch("/api/auth/wallet-proof", jsonPost(new Uint8Array([0x22, 0xff, 0x22]))),
      400,
      "invalid_json",
    );
  },

  async "a key named twice in one object is a 400 that does not repeat the key"(app) {
    const response = await app.fetch(
      "/api/auth/nonce",
      jsonPost(
        '{"address":"0x0000000000000000000000000000000000000001","sk-twice":1,"sk-twice":2}',
      ),
    );
    const text = await response.clone().text();
    await expectError(response, 400, "invalid_json");
    assert.doesNotMatch(text, /sk-twice/);
  },

  async "a body that is not JSON is a 415"(app) {
    await expectError(
      await app.fetch(
        "/api/auth/wallet-proof",
        jsonPost("message=x", "application/x-www-form-urlencoded"),
      ),
      415,
      "unsupported_media_type",
    );
  },

  async "a body over 16 KiB (a wallet proof: 48 KiB) is a 413, whether declared or streamed"(app) {
    await expectError(
      await app.fetch(
        "/api/auth/nonce",
        jsonPost(JSON.stringify({ x: "x".repeat(MAX_BODY_BYTES) })),
      ),
      413,
      "payload_too_large",
    );
    const big = JSON.stringify({ message: "x".repeat(MAX_PROOF_BODY_BYTES), signature: "0x" });
    for (const path of ["/api/auth/wallet-proof", "/functions/v1/wallet-proof"]) {
      await expectError(await app.fetch(path, jsonPost(big)), 413, "payload_too_large");
    }
    let pulled = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled += 1024;
        controller.enqueue(new Uint8Array(1024).fill(0x20));
      },
    });
    const response = await app.fetch("/api/auth/wallet-proof", {
      ...jsonPost(endless),
      // @ts-ignore: Deno needs duplex for a streamed request body.
      duplex: "half",
    });
    await expectError(response, 413, "payload_too_large");
    assert.ok(pulled <= MAX_BODY_BYTES + 64 * 1024, `stopped reading early (read ${pulled} bytes)`);
  },

  async "a CORS preflight allows the client headers and never the reveal header"(app) {
    const response = await app.fetch("/api/secrets", {
      method: "OPTIONS",
      headers: {
        origin: "https://creator.example",
        "access-control-request-method": "PUT",
        "access-control-request-headers": "authorization, content-type, x-service-server-secret",
      },
    });
    assert.equal(response.status, 204);
    const allowed = response.headers.get("access-control-allow-headers") ?? "";
    assert.deepEqual(allowed.split(",").map((h) => h.trim()).sort(), [
      "apikey",
      "authorization",
      "content-type",
      "x-client-info",
    ]);
    assert.ok(!allowed.includes("x-service-server-secret"));
    assert.equal(allowed, CORS_ALLOWED_HEADERS);
  },

  async "responses carry CORS headers and are never cached"(app) {
    const response = await app.fetch("/api/secrets", {
      headers: { origin: "https://creator.example" },
    });
    assert.equal(response.headers.get("access-control-allow-origin"), "*");
    assert.equal(response.headers.get("cache-control"), "no-store");
    await response.body?.cancel();
  },
});

describeWithDatabase("CORS with ALLOWED_ORIGINS set", {
  async "only the listed origins are echoed back"(app) {
    const allowed = await app.fetch("/api/secrets", {
      headers: { origin: "https://app.example.com" },
    });
    assert.equal(allowed.headers.get("access-control-allow-origin"), "https://app.example.com");
    await allowed.body?.cancel();
    const other = await app.fetch("/api/secrets", { headers: { origin: "https://evil.example" } });
    assert.equal(other.headers.get("access-control-allow-origin"), null);
    await other.body?.cancel();
  },
}, { ALLOWED_ORIGINS: "https://app.example.com" });

Deno.test("an unexpected failure is a generic 500 with no message, stack or detail", async () => {
  const logged: string[] = [];
  const handler = serve(
    () => Promise.reject(new Error("boom: SECRET-VALUE-123 at /work/main/x.ts:1:1")),
    { allowedOrigins: [] },
    { info: () => {}, error: (event, fields) => logged.push(JSON.stringify({ event, ...fields })) },
  );
  const response = await handler(new Request("http://localhost/x"));
  const text = await response.text();
  assert.equal(response.status, 500);
  assert.deepEqual(JSON.parse(text), {
    error: { code: "internal_error", message: "Something went wrong on our side." },
  });
  assert.ok(
    logged.every((line) => !line.includes("SECRET-VALUE-123")),
    "the log holds no message either",
  );
});

Deno.test("a lost database connection is a 503 with Retry-After", async () => {
  const handler = serve(
    () =>
      Promise.reject(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })),
    { allowedOrigins: [] },
    silentLogger,
  );
  const response = await handler(new Request("http://localhost/x"));
  assert.equal(response.status, 503);
  assert.equal(response.headers.get("retry-after"), "1");
  assert.deepEqual((await response.json()).error, {
    code: "database_unavailable",
    message: "The database is unavailable; retry shortly.",
    retryAfterSeconds: 1,
  });
});

Deno.test("a statement cut off by its timeout, or ended to break a deadlock, is unavailable (503) but no connection failure", () => {
  for (
    const error of [{ code: "ECONNREFUSED" }, { code: "08006" }, { name: "ConnectionRefused" }]
  ) {
    assert.ok(isDatabaseUnavailable(error) && isConnectionFailure(error), JSON.stringify(error));
  }
  for (const reached of [{ code: "57014" }, { code: "40P01" }, { code: "40001" }]) {
    assert.ok(isDatabaseUnavailable(reached), reached.code);
    assert.ok(!isConnectionFailure(reached), reached.code);
  }
  assert.ok(!isConnectionFailure({ code: "42P01" }));
});

Deno.test("routes match below the function name with or without the /functions/v1 prefix", async () => {
  const handle = router("demo", [{
    method: "GET",
    path: "/thing",
    handle: () => Promise.resolve(new Response("ok")),
  }]);
  assert.equal(await (await handle(new Request("http://x/demo/thing"))).text(), "ok");
  assert.equal(await (await handle(new Request("http://x/functions/v1/demo/thing/"))).text(), "ok");
  assert.equal(await (await handle(new Request("http://x/demo/thing////"))).text(), "ok");
  // Only trailing slashes go: a run of them anywhere else is part of another path. (Trimmed from
  // the end in one pass; the regex it replaced took over a second on a 64 KB run of slashes.)
  for (const path of [`/demo/${"/".repeat(65_000)}thing`, `/demo/thing${"/".repeat(65_000)}x`]) {
    assert.throws(
      () => handle(new Request(`http://x${path}`)),
      (e: ServiceError) => e.code === "not_found",
    );
  }
  assert.equal(subpath(`http://x/demo${"/".repeat(65_000)}`, "demo"), "");
  assert.throws(
    () => handle(new Request("http://x/demo/other")),
    (e: ServiceError) => e.code === "not_found",
  );
  assert.throws(
    () => handle(new Request("http://x/demoX/thing")),
    (e: ServiceError) => e.code === "not_found",
  );
});

Deno.test("a URL that does not parse (Deno.serve builds it from the Host header) is a 400, not a 500", () => {
  for (const url of ["http://a b/demo/thing", "http://a:99999/demo/thing", "http://[::1/demo"]) {
    assert.throws(
      () => subpath(url, "demo"),
      (e: ServiceError) => e.code === "invalid_request" && e.status === 400,
    );
  }
});

Deno.test("a routed path handed beside the request wins over the URL; anything else is ignored", async () => {
  const handle = router("demo", [{
    method: "GET",
    path: "/thing",
    handle: () => Promise.resolve(new Response("ok")),
  }]);
  // How the /api proxy calls a function: the request as it came, the path below the name beside it.
  assert.equal(await (await handle(new Request("http://x/api/other"), "/thing")).text(), "ok");
  assert.throws(
    () => handle(new Request("http://x/demo/thing"), "/other"),
    (e: ServiceError) => e.code === "not_found",
  );
  // Deno.serve, handed a function directly, passes its connection info second: routed by URL.
  const info = { remoteAddr: { transport: "tcp", hostname: "127.0.0.1", port: 1 } };
  const viaServe = handle as unknown as (request: Request, info: unknown) => Promise<Response>;
  assert.equal(await (await viaServe(new Request("http://x/demo/thing"), info)).text(), "ok");
});

Deno.test("a route with a load is made by its first request, once, and again after a failure", async () => {
  let made = 0;
  const handle = router("demo", [{
    method: "GET",
    path: "/thing",
    load: () => {
      made++;
      return Promise.resolve(() => Promise.resolve(new Response(`made ${made}`)));
    },
  }]);
  assert.equal(made, 0, "nothing is made before a request");
  const answers = await Promise.all(
    [1, 2, 3].map(() => handle(new Request("http://x/demo/thing"))),
  );
  assert.deepEqual(await Promise.all(answers.map((a) => a.text())), Array(3).fill("made 1"));
  assert.equal(made, 1, "requests that arrive while it loads wait for the same load");

  let makeFails = true;
  const flaky = router("demo", [{
    method: "GET",
    path: "/thing",
    load: () => {
      made++;
      return makeFails
        ? Promise.reject(new Error("the module did not load"))
        : Promise.resolve(() => Promise.resolve(new Response("loaded")));
    },
  }]);
  // Served, a failed load is the error boundary's generic 500; the next request loads again.
  const served = serve(flaky, { allowedOrigins: [] }, silentLogger);
  assert.equal((await served(new Request("http://x/demo/thing"))).status, 500);
  makeFails = false;
  assert.equal(await (await served(new Request("http://x/demo/thing"))).text(), "loaded");
  assert.equal(await (await served(new Request("http://x/demo/thing"))).text(), "loaded");
  assert.equal(made, 3);
});

Deno.test("a dependency made once is shared by its callers and made again after a failure", async () => {
  let made = 0;
  let fails = true;
  const dependency = madeOnce(() => {
    made++;
    return fails ? Promise.reject(new Error("no")) : Promise.resolve({ made });
  });
  await assert.rejects(dependency(), /no/);
  fails = false;
  const [a, b] = await Promise.all([dependency(), dependency()]);
  assert.equal(a, b);
  assert.equal(await dependency(), a);
  assert.equal(made, 2);
});

Deno.test("after its first answer, a router loads the routes with a load that were not asked for", async () => {
  const loaded: string[] = [];
  const load = (name: string) => () => {
    loaded.push(name);
    return Promise.resolve(() => Promise.resolve(new Response(name)));
  };
  const handle = router("demo", [
    { method: "GET", path: "/first", load: load("first") },
    { method: "GET", path: "/second", load: load("second") },
    { method: "POST", path: "/second", load: load("third") },
    { method: "GET", path: "/plain", handle: () => Promise.resolve(new Response("plain")) },
  ]);
  assert.deepEqual(loaded, []);
  assert.equal(await (await handle(new Request("http://x/demo/first"))).text(), "first");
  assert.deepEqual(loaded, ["first"], "the first answer waits for its own route alone");
  for (let i = 0; i < 100 && loaded.length < 3; i++) {
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  assert.deepEqual(loaded, ["first", "second", "third"]);
  assert.equal(await (await handle(new Request("http://x/demo/second"))).text(), "second");
  assert.equal(loaded.length, 3, "a route loaded ahead is not loaded again");
});

Deno.test("an empty body reads as undefined and is the handler's call", async () => {
  assert.equal(await readJson(new Request("http://x/", { method: "POST" })), undefined);
});

Deno.test("CORS headers are exactly: Vary always, the origin and Retry-After's exposure only when allowed, and a full preflight", async () => {
  const ok = () => Promise.resolve(new Response("{}", { headers: { "x-own": "kept" } }));
  const headersOf = (response: Response) =>
    [...response.headers].filter(([name]) => name !== "content-type");
  const any = serve(ok, { allowedOrigins: [] }, silentLogger);
  const listed = serve(ok, { allowedOrigins: ["https://app.example.com"] }, silentLogger);
  const get = (origin?: string) =>
    new Request("http://localhost/x", { headers: origin ? { origin } : {} });
  assert.deepEqual(headersOf(await any(get("https://a.example"))), [
    ["access-control-allow-origin", "*"],
    ["access-control-expose-headers", "retry-after"],
    ["vary", "Origin"],
    ["x-own", "kept"],
  ]);
  assert.deepEqual(headersOf(await listed(get("https://app.example.com"))), [
    ["access-control-allow-origin", "https://app.example.com"],
    ["access-control-expose-headers", "retry-after"],
    ["vary", "Origin"],
    ["x-own", "kept"],
  ]);
  assert.deepEqual(headersOf(await listed(get("https://evil.example"))), [
    ["vary", "Origin"],
    ["x-own", "kept"],
  ]);
  assert.deepEqual(headersOf(await listed(get())), [["vary", "Origin"], ["x-own", "kept"]]);
  const preflight = await listed(
    new Request("http://localhost/x", {
      method: "OPTIONS",
      headers: { origin: "https://app.example.com" },
    }),
  );
  assert.equal(preflight.status, 204);
  assert.deepEqual([...preflight.headers], [
    ["access-control-allow-headers", CORS_ALLOWED_HEADERS],
    ["access-control-allow-methods", "GET, POST, PUT, DELETE, OPTIONS"],
    ["access-control-allow-origin", "https://app.example.com"],
    ["access-control-expose-headers", "retry-after"],
    ["access-control-max-age", "600"],
    ["cache-control", "no-store"],
    ["vary", "Origin"],
  ]);
});

Deno.test("json() answers with its status, the JSON content type, no-store, and any extra headers", async () => {
  const plain = json({ a: 1 }, 201);
  assert.equal(plain.status, 201);
  assert.deepEqual([...plain.headers], [
    ["cache-control", "no-store"],
    ["content-type", "application/json; charset=utf-8"],
  ]);
  assert.deepEqual(await plain.json(), { a: 1 });
  const extra = json({}, 429, { "retry-after": "3" });
  assert.equal(extra.headers.get("retry-after"), "3");
  assert.equal(extra.headers.get("cache-control"), "no-store");
});
