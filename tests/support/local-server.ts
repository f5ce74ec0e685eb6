/** `deno task start` (server/main.ts) as a process of its own, on a port the system picks. */
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url).pathname;

/** Deno's basics, and nothing else of this process's environment (no DATABASE_URL). */
export const INHERITED: Record<string, string> = Object.fromEntries(
  ["PATH", "HOME", "DENO_DIR", "XDG_CACHE_HOME"].flatMap((name) => {
    const value = Deno.env.get(name);
    return value === undefined ? [] : [[name, value]];
  }),
);

export interface LocalServer {
  readonly port: number;
  /** What the server printed up to its "migrations:" line. */
  readonly output: string;
  /** Sends SIGTERM `signals` times and expects exit 0. */
  stop(signals?: number): Promise<void>;
}

/** Starts server/main.ts and waits for its "migrations:" line (the database is open). */
export async function startLocalServer(env: Record<string, string>): Promise<LocalServer> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", `${ROOT}server/main.ts`],
    cwd: ROOT,
    env: { ...INHERITED, NO_COLOR: "1", PORT: "0", ...env },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let output = "";
  while (!/^migrations: .*$/m.test(output)) {
    const { done, value } = await reader.read();
    if (done) {
      await child.status;
      throw new Error(`the server exited before it was ready:\n${output}\n${await stderr}`);
    }
    output += value;
  }
  const port = Number(/listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(output)?.[1]);
  assert.ok(port > 0, output);
  const draining = (async () => {
    while (!(await reader.read()).done) {
      // keep the pipe flowing
    }
  })();
  return {
    port,
    output,
    async stop(signals = 1) {
      for (let i = 0; i < signals; i++) {
        // Apart by a moment, so the second arrives while the first stop is under way (sent back
        // to back, the kernel merges them into one).
        if (i > 0) await new Promise((resolve) => setTimeout(resolve, 1));
        child.kill("SIGTERM");
      }
      const status = await child.status;
      await draining;
      await stderr;
      assert.equal(status.code, 0, `the server stopped with ${status.code}`);
    },
  };
}
