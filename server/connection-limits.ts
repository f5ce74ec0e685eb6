/**
 * The local server's socket, with the limits `Deno.serve` does not have: a deadline for each
 * request head, a deadline for each request body, and a cap on open connections.
 *
 * `Deno.serve` gives a handler nothing until a head is complete and has no header-read timeout,
 * so a client sending a head (or a body) a byte at a time holds a connection for as long as it
 * likes. Here the public port is a plain TCP listener: each accepted connection is counted, then
 * piped byte for byte to an internal `Deno.serve` on a loopback port. HTTP parsing stays entirely
 * Deno's (nothing here reads the bytes, so there is no second parser to disagree with it about
 * framing); what this layer needs to know, it learns from the internal server:
 *
 * - a connection is waiting for a head from its accept, and again from the moment its last
 *   response was delivered (`info.completed`), until the internal server calls the handler with
 *   the next request. Past `headerTimeoutMs` it is closed. That also ends idle keep-alive
 *   connections after the same time.
 * - a request's body must have arrived within `bodyTimeoutMs` of its head; otherwise the request
 *   is answered 408 `request_timeout` and its connection closed.
 *
 * The handler sees the client's own socket address as `info.remoteAddr`: each internal connection
 * is mapped back to the accepted one by its local port. A connection made straight to the
 * internal port (bypassing the limits) maps to nothing and is answered 421.
 */
import { ServiceError } from "../functions/_shared/http/errors.ts";
import { errorResponse } from "../functions/_shared/http/responses.ts";
import { invalidHost } from "../functions/_shared/http/router.ts";
import { addrKey, LINGER_MS, Tunnel } from "./tunnel.ts";

export interface ConnectionLimits {
  /** From accept, or from the last response, until a request head is complete. */
  readonly headerTimeoutMs: number;
  /** From a complete head until its body has arrived in full. */
  readonly bodyTimeoutMs: number;
  /** Connections open at once; one more is closed as soon as it is accepted. */
  readonly maxConnections: number;
}

const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  headerTimeoutMs: 10_000,
  bodyTimeoutMs: 30_000,
  maxConnections: 256,
};

const ENV_NAMES = {
  headerTimeoutMs: "LOCAL_HEADER_TIMEOUT_MS",
  bodyTimeoutMs: "LOCAL_BODY_TIMEOUT_MS",
  maxConnections: "LOCAL_MAX_CONNECTIONS",
} as const satisfies Record<keyof ConnectionLimits, string>;

/** Upper bounds, so a typo cannot turn a limit off (a day; far more sockets than a laptop has). */
const MAXIMA: ConnectionLimits = {
  headerTimeoutMs: 86_400_000,
  bodyTimeoutMs: 86_400_000,
  maxConnections: 100_000,
};

/**
 * LOCAL_HEADER_TIMEOUT_MS, LOCAL_BODY_TIMEOUT_MS, LOCAL_MAX_CONNECTIONS (unset or blank: the
 * default). Throws naming every variable that is not a positive integer in range.
 */
export function connectionLimitsFromEnv(
  env: Readonly<Record<string, string | undefined>>,
): ConnectionLimits {
  const limits = { ...DEFAULT_CONNECTION_LIMITS };
  const problems: string[] = [];
  for (const key of Object.keys(ENV_NAMES) as (keyof ConnectionLimits)[]) {
    const raw = env[ENV_NAMES[key]]?.trim();
    if (raw === undefined || raw === "") continue;
    const value = /^\d+$/.test(raw) ? Number(raw) : NaN;
    if (!(Number.isSafeInteger(value) && value >= 1 && value <= MAXIMA[key])) {
      problems.push(`${ENV_NAMES[key]} must be an integer from 1 to ${MAXIMA[key]}.`);
    } else {
      limits[key] = value;
    }
  }
  if (problems.length > 0) throw new RangeError(problems.join("\n"));
  return limits;
}

export interface LimitedServeOptions {
  readonly hostname: string;
  /** 0 picks a free port; `addr` tells which. */
  readonly port: number;
  readonly limits?: Partial<ConnectionLimits>;
}

export interface LimitedServer {
  /** The public address. */
  readonly addr: Deno.NetAddr;
  /** The internal server's address (loopback); a request made to it directly is answered 421. */
  readonly internalAddr: Deno.NetAddr;
  /** Connections accepted and not yet closed. */
  readonly openConnections: number;
  /** Stops accepting, lets requests in flight finish, then closes every connection. */
  shutdown(): Promise<void>;
}

/** Bodies up to this size are read ahead as they arrive, so the deadline is about arrival. */
const READ_AHEAD_BYTES = 64 * 1024;
/** The Fetch API cannot build a Request with these; atEdge routes them without the body. */
const UNBUILDABLE_METHOD = /^(connect|trace|track)$/i;

export function serveWithLimits(
  options: LimitedServeOptions,
  handler: Deno.ServeHandler<Deno.NetAddr>,
): LimitedServer {
  const limits = { ...DEFAULT_CONNECTION_LIMITS, ...options.limits };
  /** Keyed by the internal connection's local address, as the internal server sees its peer. */
  const byInnerAddr = new Map<string, Tunnel>();
  const tunnels = new Set<Tunnel>();

  const inner = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (request, info) => {
      const tunnel = byInnerAddr.get(addrKey(info.remoteAddr));
      if (tunnel === undefined) {
        return errorResponse(
          new ServiceError("misdirected_request", "Connect to the server's public port."),
        );
      }
      tunnel.requestStarted();
      const settled = () => tunnel.requestFinished();
      info.completed.then(settled, settled);
      const clientInfo: Deno.ServeHandlerInfo<Deno.NetAddr> = {
        remoteAddr: tunnel.remoteAddr,
        completed: info.completed,
      };
      const method = request.method.toUpperCase();
      if (
        request.body === null || method === "GET" || method === "HEAD" ||
        UNBUILDABLE_METHOD.test(method)
      ) {
        return handler(request, clientInfo);
      }
      return withBodyDeadline(handler, limits.bodyTimeoutMs, request, clientInfo, tunnel);
    },
  );
  const innerPort = inner.addr.port;

  const listener = Deno.listen({
    hostname: options.hostname,
    port: options.port,
    transport: "tcp",
  });
  let accepting = true;
  let closing: Promise<void> | null = null;
  /** Resolved when the last connection has closed, once shutdown waits for that. */
  let allClosed: PromiseWithResolvers<void> | null = null;
  const acceptLoop = (async () => {
    while (accepting) {
      let conn: Deno.TcpConn;
      try {
        conn = await listener.accept();
      } catch (error) {
        if (!accepting || error instanceof Deno.errors.BadResource) return;
        // Out of file descriptors and the like: back off a moment rather than spin.
        await new Promise((resolve) => setTimeout(resolve, 50));
        continue;
      }
      if (tunnels.size >= limits.maxConnections) {
        // Over the cap: closed at once, before a byte is read.
        conn.close();
        continue;
      }
      const tunnel = new Tunnel(conn, limits.headerTimeoutMs, (closed) => {
        tunnels.delete(closed);
        if (closed.innerKey !== null) byInnerAddr.delete(closed.innerKey);
        if (tunnels.size === 0) allClosed?.resolve();
      });
      tunnels.add(tunnel);
      tunnel.connect(innerPort, (key) => byInnerAddr.set(key, tunnel));
    }
  })();

  return {
    addr: listener.addr,
    internalAddr: inner.addr,
    get openConnections() {
      return tunnels.size;
    },
    shutdown() {
      // Once: a second call (a second signal) waits for the first instead of closing twice.
      closing ??= (async () => {
        accepting = false;
        listener.close();
        await acceptLoop;
        // Each connection ends after the answer in progress (or now, if idle): one whose head
        // deadline was re-armed after an answer would otherwise hold the graceful shutdown below
        // open until that deadline.
        for (const tunnel of tunnels) tunnel.endWhenIdle();
        // Deno's graceful shutdown: requests in flight finish, idle connections close.
        await inner.shutdown();
        // The last answers may still be in the pumps on their way to the clients: each connection
        // closes itself once its bytes are out; any left after the linger time are cut.
        allClosed = Promise.withResolvers();
        if (tunnels.size === 0) allClosed.resolve();
        let linger: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([
          allClosed.promise,
          new Promise((resolve) => linger = setTimeout(resolve, LINGER_MS)),
        ]);
        clearTimeout(linger);
        for (const tunnel of tunnels) tunnel.destroy();
      })();
      return closing;
    },
  };
}

/**
 * The handler's answer to a request whose body must arrive within `bodyTimeoutMs`: past it the
 * request is answered 408 and its connection closed once that answer is out.
 */
function withBodyDeadline(
  handler: Deno.ServeHandler<Deno.NetAddr>,
  bodyTimeoutMs: number,
  request: Request,
  info: Deno.ServeHandlerInfo<Deno.NetAddr>,
  tunnel: Tunnel,
): Promise<Response> {
  const reader = request.body!.getReader();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let timedOut = false;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const arrived = () => clearTimeout(timer);
  const body = new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
      },
      async pull(c) {
        let result: ReadableStreamReadResult<Uint8Array>;
        try {
          result = await reader.read();
        } catch (error) {
          arrived();
          if (!timedOut) c.error(error);
          return;
        }
        if (timedOut) return;
        if (result.done) {
          arrived();
          c.close();
        } else {
          c.enqueue(result.value);
        }
      },
      cancel(reason) {
        arrived();
        return reader.cancel(reason);
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: READ_AHEAD_BYTES }),
  );
  let limited: Request;
  try {
    limited = new Request(request.url, {
      method: request.method,
      headers: request.headers,
      body,
    });
  } catch {
    // Its Host makes no URL (Deno.serve does not check it): refused without waiting for the body.
    reader.cancel().catch(() => {});
    return Promise.resolve(errorResponse(invalidHost()));
  }
  const timeout = new Promise<Response>((resolve) => {
    timer = setTimeout(() => {
      timedOut = true;
      controller.error(new ServiceError("request_timeout", "The request body timed out."));
      // Not reader.cancel(): in Deno 2.9.6, cancelling a body with a read still pending leaks
      // memory on every such request. Closing the connection after the answer settles that read.
      tunnel.closeAfterResponse();
      resolve(errorResponse(
        new ServiceError(
          "request_timeout",
          `The request body did not arrive within ${bodyTimeoutMs} ms.`,
        ),
      ));
    }, bodyTimeoutMs);
  });
  const answered = (async () => await handler(limited, info))();
  answered.then(arrived, arrived);
  return Promise.race([answered, timeout]).then((response) => {
    if (timedOut) {
      // The app's late answer (if any) is not sent: release its body.
      answered.then((late) => late.body?.cancel(), () => {});
    }
    return response;
  });
}
