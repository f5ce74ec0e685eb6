/** Loopback ports for the processes tests and the bench start. */

/** A loopback port nobody listens on right now. */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** Resolves once something accepts connections on `port`; rejects with `describe()` past the deadline. */
export async function waitForPort(
  port: number,
  describe: () => string,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(describe());
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
