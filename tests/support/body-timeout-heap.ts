/**
 * Run by tests/connection_limits_test.ts in its own process, with --expose-gc: `ROUNDS` rounds of
 * `PER_ROUND` requests whose body never arrives in full, each answered 408 at the body deadline.
 * Prints the JS heap after a warm-up round and after the rest, each after a forced GC, as JSON.
 */
import { serveWithLimits } from "../../server/connection-limits.ts";

const PER_ROUND = 256;
const ROUNDS = 3;
const BATCH = 32;

const server = serveWithLimits(
  { hostname: "127.0.0.1", port: 0, limits: { headerTimeoutMs: 2000, bodyTimeoutMs: 100 } },
  async (request) => new Response(await request.text().catch(() => "timed out")),
);
const head = new TextEncoder().encode(
  "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\nabc",
);

async function timedOutRequest(): Promise<void> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.addr.port });
  try {
    await conn.write(head);
    await conn.read(new Uint8Array(4096)); // the 408
  } finally {
    conn.close();
  }
}

async function round(): Promise<void> {
  for (let sent = 0; sent < PER_ROUND; sent += BATCH) {
    await Promise.all(Array.from({ length: BATCH }, timedOutRequest));
  }
}

async function settledHeap(): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, 500));
  (globalThis as { gc?: () => void }).gc!();
  return Deno.memoryUsage().heapUsed;
}

await round();
const before = await settledHeap();
for (let i = 0; i < ROUNDS; i++) await round();
const after = await settledHeap();
await server.shutdown();
console.log(JSON.stringify({ requests: PER_ROUND * ROUNDS, before, after }));
