/**
 * The local server's socket limits over real TCP sockets: a head or a body that does not arrive
 * in time ends its connection, connections past the cap are closed, and nothing changes for a
 * client that behaves. Deadlines are small here (they are settings); no assertion is about time:
 * a connection the server should close but does not fails the test through a generous safety
 * wait instead.
 */
import { FORWARDED_FOR } from "../functions/_shared/config/env-schema.ts";
import assert from "node:assert/strict";
import { atEdge } from "../server/app.ts";
import { router } from "../functions/_shared/http/router.ts";
import type { ServiceError } from "../functions/_shared/http/errors.ts";
import { errorResponse } from "../functions/_shared/http/responses.ts";
import {
  type ConnectionLimits,
  connectionLimitsFromEnv,
  type LimitedServer,
  serveWithLimits,
} from "../server/connection-limits.ts";
import { startTestApp, type TestApp } from "./support/app.ts";

/** Long enough for any loaded machine to have acted on a 200 ms deadline. */
const SAFETY_MS = 15_000;
const encoder = new TextEncoder();

interface Ended {
  /** Everything the server sent (latin1). */
  readonly received: string;
  /** How the server ended it: end of stream, or a reset. */
  readonly how: "eof" | "reset";
}

/** Reads until the server ends the connection; fails if it has not within SAFETY_MS. */
async function readUntilClosed(conn: Deno.Conn): Promise<Ended> {
  let received = "";
  const buffer = new Uint8Array(16 * 1024);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const safety = new Promise<"open">((resolve) => {
    timer = setTimeout(() => resolve("open"), SAFETY_MS);
  });
  const reading = (async (): Promise<"eof" | "reset"> => {
    for (;;) {
      let n: number | null;
      try {
        n = await conn.read(buffer);
      } catch {
        return "reset";
      }
      if (n === null) return "eof";
      received += new TextDecoder("latin1").decode(buffer.subarray(0, n));
    }
  })();
  try {
    const how = await Promise.race([reading, safety]);
    if (how === "open") {
      assert.fail(`the server kept the connection open; it sent ${JSON.stringify(received)}`);
    }
    return { received, how };
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch {
      // already closed
    }
  }
}

/** Reads one complete HTTP/1 answer with a Content-Length body, leaving the connection open. */
/** One answer's status, head (its lines after the status line) and body. */
async function readFullAnswer(
  conn: Deno.Conn,
): Promise<{ status: number; head: string; body: string }> {
  let text = "";
  const buffer = new Uint8Array(16 * 1024);
  for (;;) {
    const split = text.indexOf("\r\n\r\n");
    if (split >= 0) {
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(text.slice(0, split))?.[1] ?? 0);
      if (text.length >= split + 4 + length) {
        return {
          status: Number(text.slice(9, 12)),
          head: text.slice(0, split),
          body: text.slice(split + 4, split + 4 + length),
        };
      }
    }
    const n = await conn.read(buffer);
    if (n === null) throw new Error(`closed mid-answer after ${JSON.stringify(text)}`);
    text += new TextDecoder().decode(buffer.subarray(0, n));
  }
}

async function readAnswer(conn: Deno.Conn): Promise<{ status: number; body: string }> {
  const { status, body } = await readFullAnswer(conn);
  return { status, body };
}

const write = (conn: Deno.Conn, text: string) => conn.write(encoder.encode(text));

function serve(
  limits: Partial<ConnectionLimits>,
  handler: Deno.ServeHandler<Deno.NetAddr> = () => new Response("ok"),
): LimitedServer & AsyncDisposable {
  const server = serveWithLimits({ hostname: "127.0.0.1", port: 0, limits }, handler);
  return Object.assign(server, { [Symbol.asyncDispose]: () => server.shutdown() });
}

const connect = (server: { addr: Deno.NetAddr }) =>
  Deno.connect({ hostname: "127.0.0.1", port: server.addr.port });

Deno.test("a connection whose request head does not arrive within the header deadline is closed", async () => {
  let handled = 0;
  await using server = serve({ headerTimeoutMs: 200 }, () => {
    handled++;
    return new Response("ok");
  });
  const partial = await connect(server);
  await write(partial, "GET /api/secrets HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a");
  const ended = await readUntilClosed(partial);
  assert.equal(ended.received, "");
  // A client that says nothing at all is closed the same way.
  const silent = await connect(server);
  assert.equal((await readUntilClosed(silent)).received, "");
  assert.equal(handled, 0);
});

Deno.test("a keep-alive connection is closed once idle for the header deadline, after its answers", async () => {
  await using server = serve({ headerTimeoutMs: 300 });
  const conn = await connect(server);
  for (let i = 0; i < 3; i++) {
    await write(conn, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    assert.deepEqual(await readAnswer(conn), { status: 200, body: "ok" });
  }
  // Then the start of a fourth head, never finished.
  await write(conn, "GET / HTTP/1.1\r\n");
  assert.equal((await readUntilClosed(conn)).received, "");
});

Deno.test("a body that trickles past the body deadline is answered 408 request_timeout and its connection closed", async () => {
  const app: TestApp = await startTestApp("pglite");
  try {
    await using server = serve(
      { headerTimeoutMs: 60_000, bodyTimeoutMs: 300 },
      atEdge(app.app.handler, app.config.clientIp),
    );
    const conn = await connect(server);
    await write(
      conn,
      "POST /api/auth/nonce HTTP/1.1\r\nHost: 127.0.0.1:54321\r\n" +
        "Content-Type: application/json\r\nContent-Length: 500\r\n\r\n{",
    );
    // One byte every 50 ms: the body would take 25 s.
    let writing = true;
    const trickle = (async () => {
      while (writing) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        if (!writing) break;
        await write(conn, " ");
      }
    })().catch(() => {}); // the server closes while we write
    const ended = await readUntilClosed(conn);
    writing = false;
    await trickle;
    assert.match(ended.received, /^HTTP\/1\.1 408 /);
    assert.match(ended.received, /"code":"request_timeout"/);
    assert.match(ended.received, /did not arrive within 300 ms/);
  } finally {
    await app.close();
  }
});

Deno.test("bodies that arrive in time reach the handler whole, small and large", async () => {
  await using server = serve({ bodyTimeoutMs: 10_000 }, async (request) => {
    const bytes = new Uint8Array(await request.arrayBuffer());
    const sum = bytes.reduce((a, b) => (a + b) % 65_521, 0);
    return new Response(`${bytes.length}:${sum}`);
  });
  for (const size of [0, 1, 16 * 1024, 200 * 1024]) {
    const body = Uint8Array.from({ length: size }, (_, i) => (i * 7) % 251);
    const expected = `${size}:${body.reduce((a, b) => (a + b) % 65_521, 0)}`;
    const response = await fetch(`http://127.0.0.1:${server.addr.port}/echo`, {
      method: "PUT",
      body,
    });
    assert.equal(await response.text(), expected);
  }
});

Deno.test("connections past the cap are closed at once, and a request gets through once one goes away", async () => {
  await using server = serve({ maxConnections: 2, headerTimeoutMs: 60_000 });
  const held = [await connect(server), await connect(server)];
  // Both are accepted and counted before the next connection arrives.
  while (server.openConnections < 2) await new Promise((resolve) => setTimeout(resolve, 10));

  const refused = await connect(server);
  await write(refused, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").catch(() => 0);
  assert.equal((await readUntilClosed(refused)).received, "");
  assert.equal(server.openConnections, 2);

  held.pop()!.close();
  while (server.openConnections > 1) await new Promise((resolve) => setTimeout(resolve, 10));
  const normal = await connect(server);
  await write(normal, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  const answer = await readUntilClosed(normal);
  assert.match(answer.received, /^HTTP\/1\.1 200 /);
  assert.match(answer.received, /\r\n\r\nok$/);
  held.pop()!.close();
});

Deno.test("the handler sees the client's own socket address, and x-forwarded-for at the edge is it", async () => {
  await using server = serve({}, (request, info) =>
    Response.json({
      remote: `${info.remoteAddr.hostname}:${info.remoteAddr.port}`,
      forwarded: request.headers.get("x-forwarded-for"),
    }));
  const conn = await connect(server);
  await write(
    conn,
    "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: 203.0.113.9\r\nConnection: close\r\n\r\n",
  );
  const { received } = await readUntilClosed(conn);
  const seen = JSON.parse(received.slice(received.indexOf("\r\n\r\n") + 4));
  const local = conn.localAddr as Deno.NetAddr;
  assert.equal(seen.remote, `${local.hostname}:${local.port}`);

  // Through atEdge, as the local server mounts the app: the socket's address, not the header.
  await using edge = serve(
    {},
    atEdge(
      (request) => Promise.resolve(new Response(request.headers.get("x-forwarded-for"))),
      { header: FORWARDED_FOR, trustedHops: 1 },
    ),
  );
  const viaIpv4 = await fetch(`http://127.0.0.1:${edge.addr.port}/`, {
    headers: { "x-forwarded-for": "203.0.113.9" },
  });
  assert.equal(await viaIpv4.text(), "127.0.0.1");
});

Deno.test("the client's address survives the internal hop when it differs from the hop's own", async () => {
  // Public side on IPv6 loopback, internal hop on 127.0.0.1: the handler must see ::1.
  const server = serveWithLimits(
    { hostname: "::1", port: 0 },
    atEdge(
      (request) => Promise.resolve(new Response(request.headers.get("x-forwarded-for"))),
      { header: FORWARDED_FOR, trustedHops: 1 },
    ),
  );
  try {
    const response = await fetch(`http://[::1]:${server.addr.port}/`);
    assert.equal(await response.text(), "::1");
  } finally {
    await server.shutdown();
  }
});

Deno.test("a Host that makes no URL is a 400 invalid_request, with or without a body; TRACE is routed as deployed: 405 with Allow, or 404", async () => {
  let handled = 0;
  const routes = router("api", [{
    method: "GET",
    path: "/secrets",
    handle: () => {
      handled++;
      return Promise.resolve(new Response("ok"));
    },
  }]);
  await using server = serve(
    {},
    atEdge(
      async (request) => {
        try {
          return await routes(request);
        } catch (error) {
          return errorResponse(error as ServiceError);
        }
      },
      { header: FORWARDED_FOR, trustedHops: 1 },
    ),
  );
  const ask = async (head: string, body = "") => {
    const conn = await connect(server);
    try {
      await write(conn, `${head}\r\nConnection: close\r\n\r\n${body}`);
      return await readFullAnswer(conn);
    } finally {
      conn.close();
    }
  };
  for (const host of ["a b", "a<b", "[::1", "a%zz", "a:99999"]) {
    for (
      const [head, body] of [
        [`GET /api/secrets HTTP/1.1\r\nHost: ${host}`, ""],
        [`PUT /api/secrets HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 2`, "{}"],
        [`POST /api/auth/nonce HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 0`, ""],
      ]
    ) {
      const answer = await ask(head, body);
      assert.equal(answer.status, 400, `${head}: ${answer.body}`);
      assert.equal(JSON.parse(answer.body).error.code, "invalid_request");
    }
  }
  for (const method of ["TRACE", "TRACK", "trace"]) {
    const answer = await ask(`${method} /api/secrets HTTP/1.1\r\nHost: 127.0.0.1`);
    assert.equal(answer.status, 405, answer.body);
    assert.match(answer.head, /\r\nallow: GET, HEAD(\r\n|$)/i);
    assert.equal(JSON.parse(answer.body).error.code, "method_not_allowed");
    const nowhere = await ask(`${method} /api/nowhere HTTP/1.1\r\nHost: 127.0.0.1`);
    assert.equal(nowhere.status, 404, nowhere.body);
  }
  assert.equal(handled, 0);
});

Deno.test("shutdown runs once: a second call (a second signal) waits for the first", async () => {
  const server = serveWithLimits({ hostname: "127.0.0.1", port: 0 }, () => new Response("ok"));
  const response = await fetch(`http://127.0.0.1:${server.addr.port}/`);
  assert.equal(await response.text(), "ok");
  // Closing the listener twice threw BadResource, uncaught, and the process exited 1.
  await Promise.all([server.shutdown(), server.shutdown()]);
  await server.shutdown();
  assert.equal(server.openConnections, 0);
});

Deno.test("shutdown ends a connection whose body is still on its way, without waiting out a deadline", async () => {
  const entered = Promise.withResolvers<void>();
  // Deadlines longer than the safety wait: a shutdown that waited for one fails the test.
  const server = serveWithLimits(
    { hostname: "127.0.0.1", port: 0, limits: { headerTimeoutMs: 60_000, bodyTimeoutMs: 60_000 } },
    async (request) => {
      entered.resolve();
      return new Response(await request.text().catch(() => "cut short"));
    },
  );
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.addr.port });
  await conn.write(
    encoder.encode("PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789"),
  );
  await entered.promise;
  const stopping = server.shutdown();
  const { received } = await readUntilClosed(conn);
  assert.match(received, /^HTTP\/1\.1 \d{3} /, "answered before the connection ended");
  assert.equal(await settled(stopping), "stopped");
  assert.equal(server.openConnections, 0);
});

Deno.test("shutdown delivers the answer being written when it starts, in full", async () => {
  const entered = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  const body = "x".repeat(1_000_000);
  const server = serveWithLimits({ hostname: "127.0.0.1", port: 0 }, async () => {
    entered.resolve();
    await release.promise;
    return new Response(body);
  });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.addr.port });
  await conn.write(encoder.encode("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  await entered.promise;
  const stopping = server.shutdown();
  release.resolve();
  const { received } = await readUntilClosed(conn);
  assert.match(received, /^HTTP\/1\.1 200 /);
  assert.ok(received.endsWith(`\r\n\r\n${body}`), `got ${received.length} bytes`);
  assert.equal(await settled(stopping), "stopped");
});

/** "stopped" once `stopping` resolves, "stuck" if it has not within SAFETY_MS. */
async function settled(stopping: Promise<void>): Promise<"stopped" | "stuck"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stuck = new Promise<"stuck">((resolve) => timer = setTimeout(resolve, SAFETY_MS, "stuck"));
  const outcome = await Promise.race([stopping.then(() => "stopped" as const), stuck]);
  clearTimeout(timer);
  return outcome;
}

Deno.test("a request made straight to the internal port is refused with 421", async () => {
  let handled = 0;
  await using server = serve({}, () => {
    handled++;
    return new Response("ok");
  });
  const response = await fetch(`http://127.0.0.1:${server.internalAddr.port}/api/secrets`);
  assert.equal(response.status, 421);
  assert.equal((await response.json()).error.code, "misdirected_request");
  assert.equal(handled, 0);
});

Deno.test("limits come from LOCAL_* variables, and a bad value is refused naming it", () => {
  // The defaults the server prints at start (README).
  const DEFAULT_CONNECTION_LIMITS = {
    headerTimeoutMs: 10_000,
    bodyTimeoutMs: 30_000,
    maxConnections: 256,
  };
  assert.deepEqual(connectionLimitsFromEnv({}), DEFAULT_CONNECTION_LIMITS);
  assert.deepEqual(
    connectionLimitsFromEnv({
      LOCAL_HEADER_TIMEOUT_MS: "250",
      LOCAL_BODY_TIMEOUT_MS: " 900 ",
      LOCAL_MAX_CONNECTIONS: "",
    }),
    { ...DEFAULT_CONNECTION_LIMITS, headerTimeoutMs: 250, bodyTimeoutMs: 900 },
  );
  for (const bad of ["0", "-1", "1.5", "ten", "1e3", "999999999999"]) {
    assert.throws(
      () => connectionLimitsFromEnv({ LOCAL_MAX_CONNECTIONS: bad, LOCAL_BODY_TIMEOUT_MS: bad }),
      (error: Error) =>
        /LOCAL_MAX_CONNECTIONS/.test(error.message) &&
        /LOCAL_BODY_TIMEOUT_MS/.test(error.message) &&
        !/LOCAL_HEADER_TIMEOUT_MS/.test(error.message),
      bad,
    );
  }
});

Deno.test("a body that times out leaves nothing behind: the heap is flat over hundreds of 408s", async () => {
  // Its own process, to force a GC between measurements (--expose-gc).
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net",
      "--v8-flags=--expose-gc",
      new URL("./support/body-timeout-heap.ts", import.meta.url).pathname,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(code, 0, new TextDecoder().decode(stderr));
  const { requests, before, after } = JSON.parse(new TextDecoder().decode(stdout));
  // Cancelling the body with a read pending kept ~3.5 KB of JS heap per request (and ~70 KB of
  // the process's memory; Deno 2.9.6): 2.7 MB here, against 0.2 MB without the cancel.
  const grownKb = Math.round((after - before) / 1024);
  assert.ok(grownKb < 1024, `the heap grew ${grownKb} KB over ${requests} timed-out bodies`);
});
