/**
 * The functions as Supabase's edge runtime runs them: each `functions/<name>/index.ts` in its own
 * process with `deno run --allow-net --allow-env` only (no read, write, run or sys), its port from
 * DENO_SERVE_ADDRESS, and only the environment Supabase provides plus the function secrets. Two
 * instances of each sit behind a small gateway that maps `/functions/v1/<name>/*` onto `/<name>/*`
 * round-robin, as Supabase's gateway hands a function its path.
 *
 * What this does not reproduce: Supabase's own gateway (its JWT check, headers and limits), the
 * edge runtime's isolate recycling, wall-clock, CPU and memory limits.
 */
import { FUNCTION_NAMES } from "./function-names.ts";
import { contractViolation } from "./contract.ts";
import { lockedTo, type OlderDeno } from "./older-deno.ts";
import { freePort, waitForPort } from "./ports.ts";

export type FunctionName = typeof FUNCTION_NAMES[number];

const ROOT = new URL("../../", import.meta.url);
const SERVE_ON_PORT = new URL("./serve-on-port.ts", import.meta.url).pathname;

export interface EdgeShape {
  /** The gateway, like `https://<project>.supabase.co`. */
  readonly url: string;
  /** Every function instance's own port, by function. */
  readonly instances: Readonly<Record<FunctionName, readonly number[]>>;
  /** The instances' process ids (the bench sums their CPU time). */
  readonly pids: readonly number[];
  /** Everything the instances printed (their logs), for leak checks. */
  output(): string;
  stop(): Promise<void>;
}

export interface EdgeOptions {
  /** The environment each instance gets, and nothing else (but the runtime's own cache dir). */
  readonly env: Readonly<Record<string, string>>;
  readonly instancesPerFunction?: number;
  readonly functions?: readonly FunctionName[];
  /** A module each instance runs before its function (`deno run --preload`). */
  readonly preload?: URL;
  /** Another Deno to run the functions with (tests/support/older-deno.ts); this one by default. */
  readonly runtime?: OlderDeno;
}

/** Where Deno keeps downloaded modules: the runtime's own, not the function's environment. */
async function denoDir(): Promise<string> {
  const given = Deno.env.get("DENO_DIR");
  if (given) return given;
  const { stdout } = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json"],
    stdout: "piped",
    stderr: "null",
  }).output();
  return JSON.parse(new TextDecoder().decode(stdout)).denoDir;
}

export async function startEdgeShape(options: EdgeOptions): Promise<EdgeShape> {
  const runtime = options.runtime;
  const cache = runtime?.denoDir ?? await denoDir();
  const functions = options.functions ?? FUNCTION_NAMES;
  const perFunction = options.instancesPerFunction ?? 2;
  const children: Deno.ChildProcess[] = [];
  let output = "";
  const instances = {} as Record<FunctionName, number[]>;

  const collect = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) output += decoder.decode(chunk, { stream: true });
  };

  for (const name of functions) {
    instances[name] = [];
    for (let i = 0; i < perFunction; i++) {
      const port = freePort();
      const child = new Deno.Command(runtime?.deno ?? Deno.execPath(), {
        args: [
          "run",
          "--allow-net",
          "--allow-env",
          "--no-prompt",
          ...(options.preload ? ["--preload", options.preload.pathname] : []),
          // An older Deno reads neither this Deno's lockfile nor DENO_SERVE_ADDRESS.
          ...(runtime ? [...lockedTo(runtime), SERVE_ON_PORT] : [`functions/${name}/index.ts`]),
        ],
        cwd: ROOT.pathname,
        clearEnv: true,
        env: {
          ...options.env,
          ...(runtime ? { FUNCTION_NAME: name, FUNCTION_PORT: String(port) } : {}),
          DENO_SERVE_ADDRESS: `tcp:127.0.0.1:${port}`,
          DENO_DIR: cache,
          DENO_NO_UPDATE_CHECK: "1",
          NO_COLOR: "1",
        },
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      collect(child.stdout).catch(() => {});
      collect(child.stderr).catch(() => {});
      children.push(child);
      instances[name].push(port);
    }
  }

  const stopAll = async () => {
    for (const child of children) {
      try {
        child.kill("SIGTERM");
      } catch {
        // already exited
      }
    }
    await Promise.all(children.map((child) => child.status));
  };

  try {
    await Promise.all(
      Object.values(instances).flat().map((port) =>
        waitForPort(port, () => `a function on port ${port} did not start:\n${output.slice(-2000)}`)
      ),
    );
  } catch (error) {
    await stopAll();
    throw error;
  }

  // Round-robin per function, like a platform spreading requests over warm instances.
  const next = new Map<string, number>();
  const gateway = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request, info) => {
      const url = new URL(request.url);
      const match = /^\/functions\/v1\/([a-z-]+)(\/.*)?$/.exec(url.pathname);
      const ports = match ? instances[match[1] as FunctionName] : undefined;
      if (!match || !ports) return new Response("no such function", { status: 404 });
      const turn = next.get(match[1]) ?? 0;
      next.set(match[1], turn + 1);
      const target = `http://127.0.0.1:${ports[turn % ports.length]}/${match[1]}${
        match[2] ?? ""
      }${url.search}`;
      const headers = new Headers(request.headers);
      // The platform's edge names the client by the socket it saw.
      headers.set("x-forwarded-for", info.remoteAddr.hostname);
      const upstream = await fetch(target, {
        method: request.method,
        headers,
        body: request.body === null ? null : await request.arrayBuffer(),
        redirect: "manual",
      });
      // fetch has decoded the body: its encoding and length are no longer what is sent on.
      const answer = new Headers(upstream.headers);
      answer.delete("content-encoding");
      answer.delete("content-length");
      return new Response(upstream.body, { status: upstream.status, headers: answer });
    },
  );

  return {
    url: `http://127.0.0.1:${gateway.addr.port}`,
    instances,
    pids: children.map((child) => child.pid),
    output: () => output,
    async stop() {
      await gateway.shutdown();
      await stopAll();
    },
  };
}

export interface EdgeCall {
  readonly method?: string;
  readonly token?: string;
  /** Sent as x-service-server-secret (the reveal token). */
  readonly serverToken?: string;
  /** Sent as JSON. */
  readonly body?: unknown;
}

export interface EdgeAnswer {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly headers: Headers;
}

/** Requests to `edge` from a page on `origin`, answered with their status and parsed JSON. */
export function edgeClient(edge: EdgeShape, origin: string) {
  return async (path: string, init: EdgeCall = {}): Promise<EdgeAnswer> => {
    const headers: Record<string, string> = { origin };
    if (init.body !== undefined) headers["content-type"] = "application/json";
    if (init.token) headers.authorization = `Bearer ${init.token}`;
    if (init.serverToken) headers["x-service-server-secret"] = init.serverToken;
    const response = await fetch(`${edge.url}${path}`, {
      method: init.method ?? "GET",
      headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    const text = await response.text();
    // A function's answer is held to docs/openapi.json (contract.ts); the gateway's own refusal
    // of a function it does not run (its own match, in startEdgeShape) is not the API's.
    const name = /^\/functions\/v1\/([a-z-]+)(\/.*)?$/.exec(new URL(path, edge.url).pathname)?.[1];
    if (name !== undefined && Object.hasOwn(edge.instances, name)) {
      const violation = contractViolation({
        method: init.method ?? "GET",
        url: `${edge.url}${path}`,
        status: response.status,
        headers: response.headers,
        body: text,
      });
      if (violation !== null) throw new Error(violation);
    }
    return {
      status: response.status,
      body: text === "" ? {} : JSON.parse(text),
      headers: response.headers,
    };
  };
}

/** `bytes` random bytes as base64: secrets and keys for a test's environment. */
export function randomSecret(bytes: number): string {
  return btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(bytes))));
}

/**
 * What Supabase provides every function, for a project at `projectUrl` whose database is `dbUrl`,
 * and the publishable key in it; the function secrets a deployer sets come on top.
 */
export function supabaseProvidedEnv(projectUrl: string, dbUrl: string) {
  const publishableKey = supabaseShapedKey("sb_publishable_");
  const env = {
    SUPABASE_URL: projectUrl,
    SUPABASE_DB_URL: dbUrl,
    SUPABASE_ANON_KEY: `eyJ${randomSecret(24).replace(/[+/=]/g, "")}`,
    SUPABASE_SERVICE_ROLE_KEY: `eyJ${randomSecret(24).replace(/[+/=]/g, "")}`,
    SUPABASE_PUBLISHABLE_KEYS: JSON.stringify({ default: publishableKey }),
    SUPABASE_SECRET_KEYS: JSON.stringify({ default: supabaseShapedKey("sb_secret_") }),
    SUPABASE_JWKS: JSON.stringify({ keys: [] }),
  };
  return { env, publishableKey };
}

/** A key shaped like Supabase's, for the environment Supabase provides. */
export function supabaseShapedKey(prefix: "sb_publishable_" | "sb_secret_"): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return prefix + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
