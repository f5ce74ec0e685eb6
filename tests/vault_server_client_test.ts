/**
 * The live-run server client against the real local server over HTTP (Deno.serve on a free port
 * over the local app), real wallet sign-ins and a real database. Stand-in servers are used only for
 * what the real one does not do on demand: stall, answer garbage, or answer 503.
 */
import assert from "node:assert/strict";
import { inspect } from "node:util";
import { freePort } from "./support/ports.ts";
import type { SecretType } from "../protocol/secret-types.ts";
import {
  createVaultServerClient,
  VaultError,
  type VaultServerClient,
  type VaultServerClientOptions,
} from "../sdk/src/server.ts";
import { bearer, signIn, type TestApp } from "./support/app.ts";
import { describeWithDatabase } from "./support/suite.ts";

const A = ["provider_a_api_key", "provider_a_org_id"];

/** A unique value per call; nothing key-shaped is ever written into this file. */
const uniqueValue = (label: string) => `${label}-${crypto.randomUUID()}`;

interface Served extends AsyncDisposable {
  readonly origin: string;
}

function serveOnFreePort(handler: (request: Request) => Response | Promise<Response>): Served {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handler);
  return {
    origin: `http://127.0.0.1:${server.addr.port}`,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/** Records every request the client makes (method and path), then lets it through. */
function countingFetch(inner: typeof fetch = fetch) {
  const calls: string[] = [];
  const counted: typeof fetch = (input, init) => {
    calls.push(`${init?.method ?? "GET"} ${new URL(String(input)).pathname}`);
    return inner(input, init);
  };
  return { fetch: counted, calls };
}

function clientFor(origin: string, app: TestApp, options: Partial<VaultServerClientOptions> = {}) {
  return createVaultServerClient({
    baseUrl: `${origin}/functions/v1`,
    revealToken: app.config.serverRevealToken,
    ...options,
  });
}

async function put(app: TestApp, token: string, secretType: string, value: string) {
  const response = await app.fetch("/api/secrets", {
    method: "PUT",
    headers: bearer(token, { "content-type": "application/json" }),
    body: JSON.stringify({ secretType, value }),
  });
  const body = await response.json();
  assert.equal(response.status, 200, JSON.stringify(body));
  return body as { updatedAt: string };
}

/** Stores one unique value per type and returns them. */
async function store(app: TestApp, token: string, types: readonly string[]) {
  const values: Record<string, string> = {};
  for (const type of types) {
    values[type] = uniqueValue(type);
    await put(app, token, type, values[type]);
  }
  return values;
}

/** The types each of the creator's reveal events names, one list per reveal. */
async function revealEvents(app: TestApp, userId: string): Promise<string[][]> {
  const rows = await app.database.db.query<{ secret_types: string[] }>(
    `select secret_types from public.secret_events
      where user_id = $1 and action = 'reveal' order by id`,
    [userId],
  );
  return rows.map((row) => row.secret_types);
}

async function clientError(promise: Promise<unknown>): Promise<VaultError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof VaultError, String(error));
    return error;
  }
  assert.fail("expected a VaultError");
}

function valuesOf(secrets: { secretTypes: SecretType[]; get(type: SecretType): string }) {
  return Object.fromEntries(secrets.secretTypes.map((type) => [type, secrets.get(type)]));
}

describeWithDatabase("the vault server client", {
  async "reveal returns the creator's own values, narrowed by type, via either base URL"(app) {
    await using server = serveOnFreePort(app.app.handler);
    const alice = await signIn(app);
    const bob = await signIn(app);
    const aliceValues = await store(app, alice.accessToken, ["provider_b_key", "provider_e_key"]);
    const bobValues = await store(app, bob.accessToken, ["provider_b_key"]);

    const direct = clientFor(server.origin, app);
    const viaProxy = clientFor(server.origin, app, { baseUrl: `${server.origin}/api/` });
    for (const client of [direct, viaProxy]) {
      const all = await client.reveal(alice.accessToken);
      assert.deepEqual(all.secretTypes, ["provider_b_key", "provider_e_key"]);
      assert.deepEqual(valuesOf(all), aliceValues);
      assert.match(all.updatedAt("provider_b_key") ?? "", /^\d{4}-\d\d-\d\dT.*Z$/);

      const one = await client.reveal(alice.accessToken, ["provider_e_key", "provider_c_key"]);
      assert.deepEqual(valuesOf(one), { provider_e_key: aliceValues.provider_e_key });
      assert.equal(one.has("provider_c_key"), false);
      const missing = await clientError(Promise.resolve().then(() => one.get("provider_c_key")));
      assert.equal(missing.code, "secret_not_revealed");

      assert.deepEqual(valuesOf(await client.reveal(bob.accessToken)), bobValues);
      assert.deepEqual(await client.storedTypes(alice.accessToken), [
        "provider_b_key",
        "provider_e_key",
      ]);
    }
  },

  async "a fetch option that adds its own header keeps every header the client set"(app) {
    await using server = serveOnFreePort(app.app.handler);
    const creator = await signIn(app);
    const values = await store(app, creator.accessToken, ["provider_b_key"]);
    const traced: string[] = [];
    // The usual wrapper: the client's headers spread into a new object, one added.
    const tracing: typeof fetch = (input, init) => {
      traced.push(String(input));
      return fetch(input, {
        ...init,
        headers: { ...init?.headers as Record<string, string>, "x-trace-id": "trace-1" },
      });
    };
    const client = clientFor(server.origin, app, { fetch: tracing });
    assert.deepEqual(await client.storedTypes(creator.accessToken), ["provider_b_key"]);
    assert.deepEqual(valuesOf(await client.reveal(creator.accessToken)), values);
    assert.equal(traced.length, 2);
  },

  async "credentialsForStep reveals exactly the chosen provider's types"(app) {
    await using server = serveOnFreePort(app.app.handler);
    const creator = await signIn(app);
    const values = await store(app, creator.accessToken, [
      ...A,
      "provider_b_key",
      "provider_e_key",
      "provider_f_api_key",
    ]);
    const counting = countingFetch();
    const client = clientFor(server.origin, app, { fetch: counting.fetch });
    const token = creator.accessToken;

    const video = await client.credentialsForStep(token, "video");
    assert.equal(video.provider, "provider_a");
    assert.equal(video.stepKind, "video");
    assert.deepEqual(valuesOf(video), {
      provider_a_api_key: values.provider_a_api_key,
      provider_a_org_id: values.provider_a_org_id,
    });
    // One list (no values) and one reveal of just provider A's types: the audit trail agrees.
    assert.deepEqual(counting.calls, [
      "GET /functions/v1/user-secrets",
      "POST /functions/v1/user-secrets/reveal",
    ]);
    assert.deepEqual(await revealEvents(app, creator.userId), [A]);

    const preferred = await client.credentialsForStep(token, "video", ["provider_b"]);
    assert.equal(preferred.provider, "provider_b");
    assert.deepEqual(valuesOf(preferred), { provider_b_key: values.provider_b_key });
    assert.deepEqual(await revealEvents(app, creator.userId), [A, ["provider_b_key"]]);

    assert.equal((await client.credentialsForStep(token, "llm")).provider, "provider_e");
    assert.equal((await client.credentialsForStep(token, "multimodal")).provider, "provider_f");
    // D is preferred but not stored: the next ready provider in the preference runs the step.
    const image = await client.credentialsForStep(token, "image", ["provider_d", "provider_b"]);
    assert.equal(image.provider, "provider_b");
  },

  async "a step no stored key enables says which keys would, and reveals nothing"(app) {
    await using server = serveOnFreePort(app.app.handler);
    const creator = await signIn(app);
    await store(app, creator.accessToken, ["provider_a_org_id", "provider_e_key"]);
    const counting = countingFetch();
    const client = clientFor(server.origin, app, { fetch: counting.fetch });

    const error = await clientError(client.credentialsForStep(creator.accessToken, "video"));
    assert.equal(error.code, "no_provider_for_step");
    assert.equal(error.status, null);
    assert.equal(
      error.message,
      "video steps need provider_a_api_key + provider_a_org_id, or provider_b_key. " +
        "Provider A is missing provider_a_api_key.",
    );
    assert.deepEqual(
      (error.details.options as { provider: string }[]).map((o) => o.provider),
      ["provider_a", "provider_b"],
    );
    assert.deepEqual(counting.calls, ["GET /functions/v1/user-secrets"]);
    assert.deepEqual(await revealEvents(app, creator.userId), []);

    // A step kind or provider no one knows (say, from a recipe) fails before any request.
    counting.calls.length = 0;
    const kind = await clientError(
      client.credentialsForStep(creator.accessToken, "audio" as "video"),
    );
    assert.equal(kind.code, "unknown_step_kind");
    const provider = await clientError(
      client.credentialsForStep(creator.accessToken, "llm", ["provider_z" as "provider_e"]),
    );
    assert.equal(provider.code, "unknown_provider");
    assert.deepEqual(counting.calls, []);
  },

  async "a key deleted between the list and the reveal moves the step to the next provider"(app) {
    await using server = serveOnFreePort(app.app.handler);
    const creator = await signIn(app);
    const values = await store(app, creator.accessToken, ["provider_c_key", "provider_d_key"]);
    // The creator deletes provider C's key right after the live run listed the stored types.
    const racing: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (init?.method === "GET") {
        const deleted = await app.fetch("/api/secrets", {
          method: "DELETE",
          headers: bearer(creator.accessToken, { "content-type": "application/json" }),
          body: JSON.stringify({ secretType: "provider_c_key" }),
        });
        assert.equal(deleted.status, 200);
      }
      return response;
    };
    const client = clientFor(server.origin, app, { fetch: racing });
    const image = await client.credentialsForStep(creator.accessToken, "image");
    assert.equal(image.provider, "provider_d");
    assert.deepEqual(valuesOf(image), { provider_d_key: values.provider_d_key });
  },

  async "results print, serialise and stringify as type names only, and nothing is logged"(app) {
    await using server = serveOnFreePort(app.app.handler);
    const creator = await signIn(app);
    const values = await store(app, creator.accessToken, ["provider_f_api_key", "provider_b_key"]);
    const logged: unknown[] = [];
    const methods = ["log", "info", "warn", "error", "debug", "trace"] as const;
    const originals = methods.map((name) => console[name]);
    for (const name of methods) console[name] = (...args: unknown[]) => logged.push(args);
    let outputs: string[];
    try {
      const client = clientFor(server.origin, app);
      const step = await client.credentialsForStep(creator.accessToken, "multimodal");
      const all = await client.reveal(creator.accessToken);
      outputs = [step, all].flatMap((result) => [
        JSON.stringify(result),
        JSON.stringify({ nested: result }),
        String(result),
        `${result}`,
        Deno.inspect(result),
        Deno.inspect({ nested: [result] }, { depth: 10 }),
        inspect(result, { depth: 10, showHidden: true }),
      ]);
    } finally {
      methods.forEach((name, index) => (console[name] = originals[index]));
    }
    assert.deepEqual(logged, []);
    for (const output of outputs) {
      for (const value of Object.values(values)) assert.ok(!output.includes(value), output);
    }
    assert.match(outputs[0], /"provider":"provider_f"/);
    assert.match(outputs[0], /provider_f_api_key/);
  },

  async "service errors arrive typed by code and status, and are not retried"(app) {
    await using server = serveOnFreePort(app.app.handler);
    const creator = await signIn(app);
    await store(app, creator.accessToken, ["provider_b_key"]);
    const counting = countingFetch();
    const client = clientFor(server.origin, app, { fetch: counting.fetch });
    const expect = async (call: () => Promise<unknown>, status: number, code: string) => {
      counting.calls.length = 0;
      const error = await clientError(call());
      assert.equal(error.code, code, error.message);
      assert.equal(error.status, status);
      assert.equal(counting.calls.length, 1, counting.calls.join(", "));
      return error;
    };

    const wrongToken = clientFor(server.origin, app, {
      fetch: counting.fetch,
      revealToken: `${app.config.serverRevealToken}x`,
    });
    await expect(() => wrongToken.reveal(creator.accessToken), 403, "reveal_forbidden");
    await expect(() => client.reveal("not-a-session"), 401, "invalid_token");
    await expect(() => client.credentialsForStep("not-a-session", "image"), 401, "invalid_token");
    // supabase-js's bearer without a session: the project's public key, which is no session
    // (not "no keys saved").
    const publicKey = app.config.publicApiKeys[0];
    await expect(() => client.reveal(publicKey), 401, "missing_token");
    await expect(() => client.storedTypes(publicKey), 401, "missing_token");
    await expect(() => client.credentialsForStep(publicKey, "image"), 401, "missing_token");
    const invalidType = await expect(
      () => client.reveal(creator.accessToken, ["provider_z_key" as SecretType]),
      400,
      "invalid_secret_type",
    );
    assert.ok(Array.isArray(invalidType.details.allowedSecretTypes));

    const loggedOut = await app.fetch("/api/auth/logout", {
      method: "POST",
      headers: bearer(creator.accessToken),
    });
    assert.equal(loggedOut.status, 204);
    await expect(() => client.reveal(creator.accessToken), 401, "session_revoked");
    await expect(
      () => client.credentialsForStep(creator.accessToken, "image"),
      401,
      "session_revoked",
    );
  },

  async "a request that gets no answer is retried once, then fails as network_error"(app) {
    await using server = serveOnFreePort(app.app.handler);
    const creator = await signIn(app);
    const values = await store(app, creator.accessToken, ["provider_e_key"]);

    // The first connection drops (as a stale keep-alive connection would); the retry gets through.
    let drops = 1;
    const flaky = countingFetch((input, init) =>
      drops-- > 0 ? Promise.reject(new TypeError("connection reset")) : fetch(input, init)
    );
    const client = clientFor(server.origin, app, { fetch: flaky.fetch });
    const step = await client.credentialsForStep(creator.accessToken, "llm");
    assert.deepEqual(valuesOf(step), values);
    assert.deepEqual(flaky.calls, [
      "GET /functions/v1/user-secrets",
      "GET /functions/v1/user-secrets",
      "POST /functions/v1/user-secrets/reveal",
    ]);

    // Nobody listens on this port: refused twice, then a typed error.
    const refused = countingFetch();
    const offline = createVaultServerClient({
      baseUrl: `http://127.0.0.1:${freePort()}/functions/v1`,
      revealToken: app.config.serverRevealToken,
      fetch: refused.fetch,
    });
    const error = await clientError(offline.reveal(creator.accessToken));
    assert.equal(error.code, "network_error");
    assert.equal(error.status, null);
    assert.ok(error.cause instanceof Error);
    assert.equal(refused.calls.length, 2);
  },
});

Deno.test("a vault that does not answer in time fails as timeout, without a retry", async () => {
  const pending: Array<() => void> = [];
  const stalls = new Promise<void>((resolve) => pending.push(resolve));
  // One route never answers; the other sends half a body and then nothing.
  await using server = serveOnFreePort((request) => {
    if (request.method === "GET") return stalls.then(() => new Response("{}"));
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode('{"secrets":['));
        stalls.then(() => controller.close());
      },
    });
    return new Response(body, { headers: { "content-type": "application/json" } });
  });
  try {
    const counting = countingFetch();
    const client = createVaultServerClient({
      baseUrl: `${server.origin}/functions/v1`,
      revealToken: "reveal-token",
      fetch: counting.fetch,
      timeoutMs: 200,
    });
    for (const call of [() => client.storedTypes("session"), () => client.reveal("session")]) {
      counting.calls.length = 0;
      const started = performance.now();
      const error = await clientError(call());
      assert.equal(error.code, "timeout");
      assert.equal(error.status, null);
      assert.match(error.message, /200 ms/);
      assert.equal(counting.calls.length, 1);
      assert.ok(performance.now() - started < 2_000);
    }
  } finally {
    pending.forEach((resolve) => resolve());
  }
});

Deno.test("answers that are not the service's JSON never quote their body", async () => {
  const planted = uniqueValue("planted");
  const answers: Record<string, () => Response> = {
    // A reveal cut off mid-value, an HTML error page from a proxy, and a wrong shape.
    "/truncated/user-secrets/reveal": () =>
      new Response(`{"secrets":[{"secretType":"provider_b_key","value":"${planted}`),
    "/html/user-secrets/reveal": () => new Response(`<html>${planted}</html>`, { status: 502 }),
    "/shape/user-secrets/reveal": () =>
      Response.json({ secrets: [{ secretType: "provider_b_key", value: [planted] }] }),
    "/unavailable/user-secrets/reveal": () =>
      Response.json(
        { error: { code: "database_unavailable", message: "The database is unavailable." } },
        { status: 503, headers: { "retry-after": "2" } },
      ),
  };
  await using server = serveOnFreePort((request) => answers[new URL(request.url).pathname]());
  const expected: Record<string, [string, number]> = {
    truncated: ["invalid_response", 200],
    html: ["invalid_response", 502],
    shape: ["invalid_response", 200],
    unavailable: ["database_unavailable", 503],
  };
  for (const [prefix, [code, status]] of Object.entries(expected)) {
    const counting = countingFetch();
    const client: VaultServerClient = createVaultServerClient({
      baseUrl: `${server.origin}/${prefix}`,
      revealToken: "reveal-token",
      fetch: counting.fetch,
    });
    const error = await clientError(client.reveal("session"));
    assert.equal(error.code, code, prefix);
    assert.equal(error.status, status, prefix);
    // Retry-After reaches the caller even when the body does not restate it.
    if (prefix === "unavailable") assert.equal(error.details.retryAfterSeconds, 2);
    // A 5xx is the service's answer too: retrying is the caller's call (Retry-After), not ours.
    assert.equal(counting.calls.length, 1, prefix);
    const text = [error.message, String(error.stack), inspect(error, { depth: 10 })].join("\n");
    assert.ok(!text.includes(planted), `${prefix}: ${text}`);
  }
});

Deno.test("a body cut short after the answer began is invalid_response, and the request is not sent again", async () => {
  // A raw socket: the head promises 100 bytes, 10 arrive, then the connection closes.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let requests = 0;
  const serving = (async () => {
    for await (const conn of listener) {
      requests++;
      const buffer = new Uint8Array(64 * 1024);
      await conn.read(buffer);
      await conn.write(new TextEncoder().encode(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n" +
          '{"secrets"',
      ));
      conn.close();
    }
  })();
  try {
    const client = createVaultServerClient({
      baseUrl: `http://127.0.0.1:${listener.addr.port}/functions/v1`,
      revealToken: "reveal-token",
    });
    const error = await clientError(client.reveal("session"));
    assert.equal(error.code, "invalid_response");
    assert.equal(error.status, 200);
    // The service answered, so it handled the reveal (audited, released): asking again would
    // make it twice.
    assert.equal(requests, 1);
  } finally {
    listener.close();
    await serving.catch(() => {});
  }
});

Deno.test("the client refuses options it cannot work with", () => {
  const base = { baseUrl: "http://127.0.0.1:1/functions/v1", revealToken: "t" };
  assert.throws(() => createVaultServerClient({ ...base, baseUrl: "/functions/v1" }), TypeError);
  assert.throws(() => createVaultServerClient({ ...base, baseUrl: "ftp://x/y" }), TypeError);
  assert.throws(() => createVaultServerClient({ ...base, revealToken: "" }), TypeError);
  assert.throws(() => createVaultServerClient({ ...base, timeoutMs: 0 }), TypeError);
  for (const revealToken of ["tok-part1\nSECRET-PART-2", "SECRET-PART-2 ", "SECRET\0PART"]) {
    assert.throws(() => createVaultServerClient({ ...base, revealToken }), (error: Error) => {
      assert.ok(error instanceof TypeError);
      assert.ok(!error.message.includes("SECRET"), "the token is quoted");
      return true;
    });
  }
});

Deno.test("plain http:// is refused for any host but loopback: the reveal token never crosses a network in clear", () => {
  const revealToken = "SECRET-reveal-token-for-this-test";
  const refused = [
    "http://vault.example.com/functions/v1",
    "http://10.0.0.5:54321/functions/v1",
    "http://192.168.1.20/api",
    "http://[2001:db8::1]:54321/functions/v1",
    "http://[::ffff:10.0.0.5]/functions/v1",
    "http://localhost.example.com/functions/v1",
    "http://127.0.0.1.nip.io/functions/v1",
    "http://0.0.0.0:54321/functions/v1",
  ];
  for (const baseUrl of refused) {
    assert.throws(() => createVaultServerClient({ baseUrl, revealToken }), (error: Error) => {
      assert.ok(error instanceof TypeError, baseUrl);
      assert.match(error.message, /https:\/\//, baseUrl);
      assert.match(error.message, /loopback/, baseUrl);
      assert.ok(!error.message.includes("SECRET"), "the token is quoted");
      return true;
    });
  }
  const allowed = [
    "https://vault.example.com/functions/v1",
    "https://10.0.0.5/api",
    "http://127.0.0.1:54321/functions/v1",
    "http://127.10.20.30/functions/v1",
    "http://127.1:54321/functions/v1",
    "http://localhost:54321/api",
    "http://LOCALHOST:54321/api",
    "http://[::1]:54321/functions/v1",
    "http://[::ffff:127.0.0.1]:54321/functions/v1",
  ];
  for (const baseUrl of allowed) {
    assert.doesNotThrow(() => createVaultServerClient({ baseUrl, revealToken }), baseUrl);
  }
});

Deno.test("a session token a header cannot carry is invalid_token, never quoted, never sent", async () => {
  const { fetch: counted, calls } = countingFetch();
  const client = createVaultServerClient({
    baseUrl: "http://127.0.0.1:1/functions/v1",
    revealToken: "reveal-token-for-this-test",
    fetch: counted,
  });
  for (const sessionToken of ["session-part1\nSECRET-PART-2", "session\rSECRET"]) {
    for (
      const call of [() => client.storedTypes(sessionToken), () => client.reveal(sessionToken)]
    ) {
      const error = await call().then(() => assert.fail("expected a refusal"), (e: unknown) => e);
      assert.ok(error instanceof VaultError);
      assert.equal(error.code, "invalid_token");
      assert.equal(error.cause, undefined);
      assert.ok(!inspect(error).includes("SECRET"), "the token is quoted");
    }
  }
  assert.deepEqual(calls, []);
});

Deno.test("a redirect is refused naming its Location, and the reveal token never follows it", async () => {
  // Another origin (another port) that records whatever reaches it.
  const received: { path: string; revealToken: boolean }[] = [];
  await using elsewhere = serveOnFreePort((request) => {
    received.push({
      path: new URL(request.url).pathname,
      revealToken: request.headers.has("x-service-server-secret"),
    });
    return Response.json({ secrets: [] });
  });
  // The vault answers every request with the status named by its first path segment.
  await using vault = serveOnFreePort((request) => {
    const path = new URL(request.url).pathname;
    return new Response(null, {
      status: Number(path.split("/")[1]),
      headers: { location: `${elsewhere.origin}/collect${path}` },
    });
  });
  for (const status of [307, 308, 301, 302, 303]) {
    const counting = countingFetch();
    const client = createVaultServerClient({
      baseUrl: `${vault.origin}/${status}/functions/v1`,
      revealToken: "reveal-token",
      fetch: counting.fetch,
    });
    const secrets = `${elsewhere.origin}/collect/${status}/functions/v1/user-secrets`;
    const calls: [() => Promise<unknown>, string][] = [
      [() => client.reveal("session"), `${secrets}/reveal`],
      [() => client.storedTypes("session"), secrets],
      [() => client.credentialsForStep("session", "llm"), secrets],
    ];
    for (const [call, location] of calls) {
      counting.calls.length = 0;
      const error = await clientError(call());
      assert.equal(error.code, "redirect_refused", `${status}: ${error.message}`);
      assert.equal(error.status, status);
      assert.equal(error.details.location, location);
      assert.ok(error.message.includes(location), error.message);
      // A redirect is an answer: not retried, not followed.
      assert.equal(counting.calls.length, 1);
    }
  }
  assert.deepEqual(received, []);
});
