/**
 * The local server (server/main.ts), or any other script, as its own process on a free loopback
 * port, with exactly the environment meant for it; and what such a process reports about itself
 * (its storage, its CPU time, where its connections go).
 */
import { generateDevKeys } from "../server/dev-keys.ts";
import { freePort } from "../tests/support/ports.ts";

const ROOT = new URL("../", import.meta.url);

/** Keys and limits for a benchmark server: fresh keys, rate limits out of the way. */
export function serverEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    APP_ENV: "development",
    PROJECT_NAME: "wallet-vault-bench",
    ...generateDevKeys(),
    RATE_LIMIT_NONCE_PER_MINUTE: "1000000",
    RATE_LIMIT_PROOF_PER_MINUTE: "1000000",
    RATE_LIMIT_PROOF_PER_ADDRESS_PER_MINUTE: "1000000",
    RATE_LIMIT_VAULT_WRITES_PER_MINUTE: "1000000",
    RATE_LIMIT_REVEALS_PER_MINUTE: "1000000",
    RATE_LIMIT_REVEALS_PER_TOKEN_PER_MINUTE: "1000000",
    ...extra,
  };
}

export interface ServerProcess {
  readonly url: string;
  readonly env: Record<string, string>;
  readonly pid: number;
  /** Every process that serves a request, when there is more than `pid` (CPU is summed over them). */
  readonly pids?: readonly number[];
  stop(): Promise<void>;
}

const DENO_PERMISSIONS = [
  "--allow-net",
  "--allow-env",
  "--allow-read",
  "--allow-write",
  "--allow-sys",
];

/**
 * The only variables a child process inherits from ours: what Deno needs to run and find its
 * caches. Everything else a server, floor or function sees is passed explicitly, so a setting of
 * the parent (DATABASE_URL above all: config.ts prefers it to PGlite) cannot change which engine a
 * row measures.
 */
export const INHERITED_ENV = [
  "PATH",
  "HOME",
  "TMPDIR",
  "LANG",
  "TZ",
  "NO_COLOR",
  "DENO_DIR",
  "DENO_NO_UPDATE_CHECK",
  "DENO_CERT",
  "XDG_CACHE_HOME",
  "NPM_CONFIG_REGISTRY",
  "SSL_CERT_FILE",
];

/** `env` plus the inherited basics above, and nothing else: pass it with `clearEnv: true`. */
export function childEnv(env: Record<string, string>): Record<string, string> {
  const base: Record<string, string> = {};
  for (const name of INHERITED_ENV) {
    const value = Deno.env.get(name);
    if (value !== undefined) base[name] = value;
  }
  return { ...base, ...env };
}

/**
 * Starts `script` with exactly `env` (PORT set here; see childEnv) and waits until `readyPath`
 * answers 200. `denoFlags` go before the script (e.g. --inspect for bench/cpu-profile.ts).
 */
export async function startProcess(
  script: string,
  env: Record<string, string>,
  readyPath = "/api/secrets",
  denoFlags: readonly string[] = [],
): Promise<ServerProcess> {
  const port = freePort();
  const fullEnv = { ...env, PORT: String(port) };
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...DENO_PERMISSIONS, ...denoFlags, new URL(script, ROOT).pathname],
    env: childEnv(fullEnv),
    clearEnv: true,
    cwd: new URL(".", ROOT).pathname,
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const stderr: string[] = [];
  const drain = (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      stderr.push(chunk);
    }
  })();
  const url = `http://127.0.0.1:${port}`;
  const exit: { status?: Deno.CommandStatus } = {};
  child.status.then((status) => exit.status = status);
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const response = await fetch(`${url}${readyPath}`);
      await response.body?.cancel();
      if (response.status === 200) break;
    } catch {
      // not listening yet
    }
    if (exit.status !== undefined || Date.now() > deadline) {
      if (exit.status === undefined) child.kill("SIGKILL");
      await drain.catch(() => {});
      const why = exit.status === undefined
        ? "no answer within 60 s"
        : `exited with ${exit.status.code}`;
      throw new Error(`${script} did not start (${why}): ${stderr.join("").slice(-2000)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url,
    env: fullEnv,
    pid: child.pid,
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch {
        // already gone
      }
      const timer = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch {
          // already gone
        }
      }, 10_000);
      await child.status;
      clearTimeout(timer);
      await drain.catch(() => {});
    },
  };
}

export function startServer(env: Record<string, string>): Promise<ServerProcess> {
  return startProcess("server/main.ts", env);
}

/** A running server's answer at `path` (GET /api/secrets, or a floor's /ready), with its storage. */
async function readiness(
  url: string,
  path: string,
): Promise<{ storage: string } & Record<string, unknown>> {
  const response = await fetch(`${url}${path}`);
  const body = await response.json().catch(() => null) as Record<string, unknown> | null;
  if (response.status !== 200 || typeof body?.storage !== "string") {
    throw new Error(`${url}${path} did not report its storage (status ${response.status})`);
  }
  return body as { storage: string } & Record<string, unknown>;
}

/** The `storage` a running server reports (GET /api/secrets), e.g. `postgres:public.user_secrets`. */
export async function reportedStorage(url: string, path = "/api/secrets"): Promise<string> {
  return (await readiness(url, path)).storage;
}

/**
 * Throws unless the process at `url` runs on `expected` storage: a row must measure the engine
 * its label names (a server that silently fell back to another database would not). Returns the
 * answer it read, for a caller that checks more of it.
 */
export async function assertStorage(
  what: string,
  url: string,
  expected: string,
  path = "/api/secrets",
): Promise<Record<string, unknown>> {
  const answer = await readiness(url, path);
  if (answer.storage !== expected) {
    throw new Error(
      `${what} runs on ${answer.storage}, not ${expected}: its environment is not the one meant for it`,
    );
  }
  return answer;
}

/**
 * CPU time (user + system, ms) a process has used so far, from /proc/<pid>/stat (read with `cat`:
 * Deno reads /proc itself only with --allow-all); null where there is no /proc.
 */
export async function cpuMs(pid: number): Promise<number | null> {
  try {
    const out = await new Deno.Command("cat", {
      args: [`/proc/${pid}/stat`],
      stdout: "piped",
      stderr: "null",
    }).output();
    if (!out.success) return null;
    const stat = new TextDecoder().decode(out.stdout);
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime, in 10 ms ticks
  } catch {
    return null;
  }
}

/**
 * The remote ports of the established TCP connections each of `pids` holds, from `ss` (Linux; it
 * names a socket's process for that process's own user, or root); null where ss cannot be run.
 */
export async function connectedPorts(
  pids: readonly number[],
): Promise<Map<number, number[]> | null> {
  try {
    const out = await new Deno.Command("ss", {
      args: ["-tnpH", "state", "established"],
      stdout: "piped",
      stderr: "null",
    }).output();
    return out.success ? peerPortsByPid(new TextDecoder().decode(out.stdout), pids) : null;
  } catch {
    return null;
  }
}

/**
 * `ss -tnpH state established` as the peer ports each of `pids` is connected to. A line ends with
 * the peer `address:port` and the processes holding the socket: `users:(("deno",pid=12,fd=3))`.
 */
export function peerPortsByPid(ssOutput: string, pids: readonly number[]): Map<number, number[]> {
  const ports = new Map(pids.map((pid) => [pid, [] as number[]]));
  for (const line of ssOutput.split("\n")) {
    const fields = line.trim().split(/\s+/);
    const users = fields.findIndex((field) => field.startsWith("users:"));
    if (users < 1) continue;
    const peer = fields[users - 1];
    const port = Number(peer.slice(peer.lastIndexOf(":") + 1));
    for (const [, pid] of fields.slice(users).join(" ").matchAll(/pid=(\d+)/g)) {
      ports.get(Number(pid))?.push(port);
    }
  }
  return ports;
}
