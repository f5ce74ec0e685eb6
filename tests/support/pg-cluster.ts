/**
 * A throwaway PostgreSQL cluster for tests that need to stop and start the database under the
 * service (the fault tests). It lives in a fresh temporary directory on a free loopback port, with
 * trust authentication and a private socket directory, and `destroy()` removes every trace.
 *
 * initdb refuses to run as root, so as root the server binaries run as the `postgres` user through
 * `runuser`. Where no server binaries exist, `findPostgresBinaries()` says why and tests skip.
 */
import { commandOutput } from "./command-output.ts";
import { freePort } from "./ports.ts";

export interface PostgresBinaries {
  readonly dir: string;
  /** Prefix for every command: `["runuser", "-u", "postgres", "--"]` when running as root. */
  readonly asUser: readonly string[];
  /** The uid/gid the cluster's files must belong to, when we run as root. */
  readonly owner: { uid: number; gid: number } | null;
}

export type BinariesLookup = { found: PostgresBinaries } | { missing: string };

const SEARCH_ROOTS = ["/usr/lib/postgresql", "/usr/local/pgsql", "/opt/homebrew/opt"];

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

/** Finds initdb/pg_ctl (newest major version first) and how to run them. */
export async function findPostgresBinaries(): Promise<BinariesLookup> {
  const candidates: string[] = [];
  const fromEnv = Deno.env.get("PG_BIN_DIR");
  if (fromEnv) candidates.push(fromEnv);
  for (const root of SEARCH_ROOTS) {
    try {
      const versions: string[] = [];
      for await (const entry of Deno.readDir(root)) versions.push(entry.name);
      versions.sort((a, b) => Number(b.replace(/\D/g, "")) - Number(a.replace(/\D/g, "")));
      for (const version of versions) candidates.push(`${root}/${version}/bin`);
    } catch {
      // not installed there
    }
  }
  const pgConfig = await commandOutput("pg_config", ["--bindir"]);
  if (pgConfig) candidates.push(pgConfig);

  let dir: string | undefined;
  for (const candidate of candidates) {
    if (await exists(`${candidate}/initdb`) && await exists(`${candidate}/pg_ctl`)) {
      dir = candidate;
      break;
    }
  }
  if (dir === undefined) {
    return { missing: "no PostgreSQL server binaries (initdb, pg_ctl) found; set PG_BIN_DIR" };
  }
  if (Deno.uid() !== 0) return { found: { dir, asUser: [], owner: null } };

  // As root: run the server as `postgres`, which must exist and be reachable through runuser.
  const uid = await commandOutput("id", ["-u", "postgres"]);
  const gid = await commandOutput("id", ["-g", "postgres"]);
  if (
    uid === null || gid === null ||
    !(await exists("/usr/sbin/runuser") || await exists("/sbin/runuser"))
  ) {
    return { missing: "running as root, and no `postgres` user with runuser to run initdb as" };
  }
  return {
    found: {
      dir,
      asUser: ["runuser", "-u", "postgres", "--"],
      owner: { uid: Number(uid), gid: Number(gid) },
    },
  };
}

/** Whether this machine can freeze a server (`ps --ppid` to find its backends). */
export async function canFreeze(): Promise<boolean> {
  try {
    const result = await new Deno.Command("ps", {
      args: ["-o", "pid=", "--ppid", "1"],
      stdout: "null",
      stderr: "null",
    }).output();
    return result.success;
  } catch {
    return false;
  }
}

export interface PgCluster {
  readonly port: number;
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication). */
  readonly adminUrl: string;
  urlFor(database: string): string;
  readonly running: boolean;
  /** Starts the server and waits until it accepts connections. */
  start(): Promise<void>;
  /**
   * Stops the server. `fast` ends sessions with admin_shutdown; `immediate` kills backends without
   * a clean shutdown, as a crash would (recovery replays the WAL on the next start).
   */
  stop(mode?: "fast" | "immediate"): Promise<void>;
  /**
   * Freezes (SIGSTOP) or thaws (SIGCONT) the postmaster and its backends: the database neither
   * answers nor closes anything, as behind a network partition. Connects still complete in the
   * kernel's backlog, then hang at the startup message.
   */
  freeze(): Promise<void>;
  thaw(): Promise<void>;
  readonly frozen: boolean;
  /** Stops the server if it runs and deletes its directory. Safe to call more than once. */
  destroy(): Promise<void>;
}

export async function createPgCluster(binaries: PostgresBinaries): Promise<PgCluster> {
  const root = await Deno.makeTempDir({ prefix: "wallet-vault-pg-" });
  const dataDir = `${root}/data`;
  const socketDir = `${root}/socket`;
  const logFile = `${root}/server.log`;
  const port = freePort();
  let running = false;
  let destroyed = false;

  const run = async (tool: string, args: string[]) => {
    const [command, ...prefix] = [...binaries.asUser, `${binaries.dir}/${tool}`];
    const result = await new Deno.Command(command, {
      args: [...prefix, ...args],
      stdout: "piped",
      stderr: "piped",
      env: { LC_ALL: "C", TZ: "UTC" },
    }).output();
    if (!result.success) {
      const text = new TextDecoder().decode(result.stderr) ||
        new TextDecoder().decode(result.stdout);
      throw new Error(`${tool} failed: ${text.trim().slice(0, 2000)}`);
    }
  };

  try {
    await Deno.mkdir(socketDir);
    if (binaries.owner) {
      for (const path of [root, socketDir]) {
        await Deno.chown(path, binaries.owner.uid, binaries.owner.gid);
      }
    }
    await run("initdb", [
      "-D",
      dataDir,
      "-U",
      "postgres",
      "--auth=trust",
      "--no-sync",
      "--encoding=UTF8",
      "--locale=C",
    ]);
  } catch (error) {
    await Deno.remove(root, { recursive: true }).catch(() => {});
    throw error;
  }

  /**
   * The postmaster (first line of postmaster.pid) and every process it forked, from `ps` (reading
   * /proc would need --allow-all; deno task test grants --allow-run).
   */
  const serverPids = async (): Promise<number[]> => {
    const postmaster = Number(
      (await Deno.readTextFile(`${dataDir}/postmaster.pid`)).split("\n")[0],
    );
    const children = await new Deno.Command("ps", {
      args: ["-o", "pid=", "--ppid", String(postmaster)],
      stdout: "piped",
      stderr: "null",
    }).output();
    const pids = new TextDecoder().decode(children.stdout).split(/\s+/).filter(Boolean).map(Number);
    return [postmaster, ...pids];
  };
  let frozen = false;
  const signalServer = async (signal: "SIGSTOP" | "SIGCONT") => {
    // SIGSTOP the postmaster first so it forks nothing new; SIGCONT the backends first.
    const pids = await serverPids();
    for (const pid of signal === "SIGSTOP" ? pids : pids.reverse()) {
      try {
        Deno.kill(pid, signal);
      } catch {
        // already gone
      }
    }
    frozen = signal === "SIGSTOP";
  };

  // Should the test process die from an uncaught error, `destroy()` never runs: stop the server
  // and remove the directory synchronously on the way out instead.
  const onUnload = () => {
    if (destroyed) return;
    destroyed = true;
    try {
      const [command, ...prefix] = [...binaries.asUser, `${binaries.dir}/pg_ctl`];
      new Deno.Command(command, {
        args: [...prefix, "-D", dataDir, "-m", "immediate", "-w", "stop"],
        stdout: "null",
        stderr: "null",
      }).outputSync();
    } catch {
      // not running
    }
    try {
      Deno.removeSync(root, { recursive: true });
    } catch {
      // already gone
    }
  };
  globalThis.addEventListener("unload", onUnload);

  const cluster: PgCluster = {
    port,
    adminUrl: `postgres://postgres@127.0.0.1:${port}/postgres`,
    urlFor: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    get running() {
      return running;
    },
    async start() {
      await run("pg_ctl", [
        "-D",
        dataDir,
        "-l",
        logFile,
        "-w",
        "-t",
        "30",
        "-o",
        // Loopback only, a private socket directory, and no fsync: this cluster is disposable.
        `-p ${port} -c listen_addresses=127.0.0.1 -k ${socketDir} -c fsync=off ` +
        "-c max_connections=50 -c shared_buffers=16MB",
        "start",
      ]);
      running = true;
    },
    async stop(mode = "fast") {
      await run("pg_ctl", ["-D", dataDir, "-m", mode, "-w", "-t", "30", "stop"]);
      running = false;
    },
    get frozen() {
      return frozen;
    },
    freeze: () => signalServer("SIGSTOP"),
    thaw: () => signalServer("SIGCONT"),
    async destroy() {
      if (destroyed) return;
      destroyed = true;
      globalThis.removeEventListener("unload", onUnload);
      if (frozen) await signalServer("SIGCONT").catch(() => {});
      if (running) await cluster.stop("immediate").catch(() => {});
      await Deno.remove(root, { recursive: true }).catch(() => {});
    },
  };
  return cluster;
}
