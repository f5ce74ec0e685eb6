/**
 * Cold start on the Deno the hosted runtime follows (tests/support/older-deno.ts): each function
 * as a fresh process with --allow-net --allow-env only, from spawn to its first good answer,
 * beside the same runtime answering a hello with nothing imported.
 */
import { lockedTo, type OlderDeno } from "../tests/support/older-deno.ts";
import { freePort } from "../tests/support/ports.ts";
import { median, ROOT } from "./support.ts";

const storageOk = (body: { storage?: unknown }) => body.storage === "postgres:public.user_secrets";
const FUNCTIONS = [
  // The nonce writes: the first answer includes the first connection through the pooler.
  ["wallet-proof", "/wallet-proof/nonce", "POST", (body: { nonce?: unknown }) => !!body.nonce],
  ["user-secrets", "/user-secrets", "GET", storageOk],
  ["api", "/api/secrets", "GET", storageOk],
] as const;

/** Milliseconds from spawn to the first 200 at `path` whose body passes `ok`. */
async function firstAnswer(
  runtime: OlderDeno,
  script: string,
  env: Record<string, string>,
  path: string,
  init: RequestInit,
  ok: (body: Record<string, unknown>) => boolean,
): Promise<number> {
  const port = freePort();
  const started = performance.now();
  const child = new Deno.Command(runtime.deno, {
    args: ["run", "--allow-net", "--allow-env", "--no-prompt", ...lockedTo(runtime), script],
    cwd: ROOT.pathname,
    clearEnv: true,
    env: {
      ...env,
      FUNCTION_PORT: String(port),
      DENO_DIR: runtime.denoDir,
      DENO_NO_UPDATE_CHECK: "1",
    },
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const output = new Response(child.stderr).text();
  let exited = false;
  child.status.then(() => exited = true);
  try {
    for (;;) {
      try {
        const response = await fetch(`http://127.0.0.1:${port}${path}`, init);
        const text = await response.text();
        if (response.status === 200) {
          if (ok(text === "ok" ? {} : JSON.parse(text))) return performance.now() - started;
          throw new Error(`${script} answered ${path} with ${text.slice(0, 200)}`);
        }
      } catch (error) {
        if (!(error instanceof TypeError)) throw error; // not listening yet
      }
      if (exited || performance.now() - started > 30_000) {
        throw new Error(
          `${env.FUNCTION_NAME ?? script} never answered ${path}: ${(await output).slice(-1500)}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  } finally {
    if (!exited) child.kill("SIGKILL");
    await child.status;
  }
}

/** One run: the median of `times` cold starts of each function and of the hello, in ms. */
export async function coldStarts(runtime: OlderDeno, env: Record<string, string>, times: number) {
  const serveOnPort = new URL("tests/support/serve-on-port.ts", ROOT).pathname;
  const timed = async (measure: () => Promise<number>) => {
    await measure(); // the first start of a process fills the OS's caches
    const samples: number[] = [];
    for (let i = 0; i < times; i++) samples.push(await measure());
    return median(samples);
  };
  const hello = await timed(() =>
    firstAnswer(runtime, new URL("bench/hello.ts", ROOT).pathname, {}, "/", {}, () => true)
  );
  const functions: Record<string, number> = {};
  for (const [name, path, method, ok] of FUNCTIONS) {
    const init = method === "POST"
      ? { method, headers: { "content-type": "application/json" }, body: "{}" }
      : {};
    functions[name] = await timed(() =>
      firstAnswer(runtime, serveOnPort, { ...env, FUNCTION_NAME: name }, path, init, ok)
    );
  }
  return { hello, functions };
}
