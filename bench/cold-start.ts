/**
 * Cold start: each function as a fresh process, from spawn to its first successful answer, beside
 * its handler module's import alone and a runtime floor (Deno.serve hello, nothing imported).
 */
import type { BenchEngine } from "./engines.ts";
import { freePort } from "../tests/support/ports.ts";
import { childEnv, type ServerProcess } from "./processes.ts";
import { jsonHeaders } from "./routes.ts";
import { log } from "./settings.ts";
import { median, type RunResult } from "./summary.ts";
import type { BenchDatabase } from "./support.ts";

const ROOT = new URL("../", import.meta.url);

async function importMs(module: string): Promise<number> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", new URL("bench/import-time.ts", ROOT).pathname, module],
    cwd: ROOT.pathname,
    env: childEnv({}),
    clearEnv: true,
    stdout: "piped",
    stderr: "null",
  }).output();
  return JSON.parse(new TextDecoder().decode(output.stdout)).importMs;
}

/**
 * Spawns `script` with exactly `env` (see childEnv) and asks for `path` until it answers 200: ms
 * from spawn to that answer, and the answer's body.
 */
async function firstResponse(
  script: string,
  env: Record<string, string>,
  path: string,
  init: RequestInit = {},
): Promise<{ ms: number; body: string }> {
  const port = freePort();
  const start = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", new URL(script, ROOT).pathname],
    cwd: ROOT.pathname,
    env: childEnv({ ...env, DENO_SERVE_ADDRESS: `tcp:127.0.0.1:${port}` }),
    clearEnv: true,
    stdout: "null",
    stderr: "null",
  }).spawn();
  try {
    for (;;) {
      try {
        const response = await fetch(`http://127.0.0.1:${port}${path}`, init);
        const body = await response.text();
        if (response.status === 200) return { ms: performance.now() - start, body };
      } catch {
        // not listening yet
      }
      if (performance.now() - start > 30_000) throw new Error(`${script} never answered 200`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  } finally {
    child.kill("SIGKILL");
    await child.status;
  }
}

const FUNCTIONS = [
  {
    name: "wallet-proof",
    path: "/functions/v1/wallet-proof/nonce",
    init: { method: "POST", headers: jsonHeaders, body: "{}" },
  },
  { name: "user-secrets", path: "/functions/v1/user-secrets", init: {} },
  { name: "api", path: "/functions/v1/api/secrets", init: {} },
];

/** Copies a directory (`cp -a`), for PGlite data directories. */
export async function copyDir(from: string, prefix: string): Promise<string> {
  const to = await Deno.makeTempDir({ prefix });
  const copied = await new Deno.Command("cp", { args: ["-a", `${from}/.`, to] }).output();
  if (!copied.success) throw new Error(`could not copy ${from}`);
  return to;
}

export async function coldStarts(
  engine: BenchEngine,
  db: BenchDatabase,
  keys: Record<string, string>,
  server: ServerProcess,
  template: string | null,
  result: RunResult,
) {
  const env = engine.functionEnv(db, keys, server.url);
  const runs = 3;
  const hello: number[] = [];
  for (let i = 0; i <= runs; i++) {
    hello.push((await firstResponse("bench/hello-server.ts", {}, "/")).ms);
  }
  result.coldStart.push({
    engine: engine.name,
    function: "(runtime floor: Deno.serve hello, nothing imported)",
    firstResponseMs: median(hello.slice(1)),
    importMs: null,
    overImportMs: null,
  });
  // Functions never open PGlite: that engine's cold start is the local server's alone.
  for (const fn of env === null ? [] : FUNCTIONS) {
    const times: number[] = [];
    const imports: number[] = [];
    for (let i = 0; i <= runs; i++) {
      // An exclusive engine: each process opens its own copy of the data directory.
      let runEnv = env!;
      let copy: string | null = null;
      if (template !== null) {
        copy = await copyDir(template, "wallet-vault-bench-cold-");
        runEnv = { ...env, PGLITE_DATA_DIR: copy };
      }
      try {
        const { ms, body } = await firstResponse(
          `functions/${fn.name}/index.ts`,
          runEnv,
          fn.path,
          fn.init,
        );
        // The functions that say which storage they run on must say this engine's.
        if (fn.name !== "wallet-proof") {
          const storage = JSON.parse(body).storage;
          if (storage !== engine.storage) {
            throw new Error(`cold-started ${fn.name} runs on ${storage}, not ${engine.storage}`);
          }
        }
        if (i > 0) times.push(ms); // the first run warms Deno's caches
      } finally {
        if (copy) await Deno.remove(copy, { recursive: true }).catch(() => {});
      }
      if (i > 0) imports.push(await importMs(`functions/${fn.name}/handler.ts`));
    }
    const first = median(times);
    const imported = median(imports);
    result.coldStart.push({
      engine: engine.name,
      function: fn.name,
      firstResponseMs: first,
      importMs: imported,
      overImportMs: first - imported,
    });
    log(
      `${engine.name} cold start ${fn.name}: ${first.toFixed(0)} ms (import ${
        imported.toFixed(0)
      } ms)`,
    );
  }
}
