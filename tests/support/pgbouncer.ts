/**
 * A throwaway PgBouncer in transaction mode (Supabase's pooling mode for serverless clients) in
 * front of the test PostgreSQL server, on a free loopback port. Its server pool is deliberately
 * smaller than the number of clients, so server connections really are shared between them.
 *
 * PgBouncer refuses to run as root: as root it runs as `postgres` through `runuser`. Where the
 * binary is missing, `findPgBouncer()` says so and tests skip with that message.
 */
import { freePort, waitForPort } from "./ports.ts";

export interface PgBouncer {
  readonly port: number;
  /** The pooled URL of `database` on the upstream server, marked `?pgbouncer=true`. */
  urlFor(database: string): string;
  stop(): Promise<void>;
}

export type PgBouncerLookup = { found: { binary: string; asUser: string[] } } | {
  missing: string;
};

const CANDIDATES = ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer", "/usr/local/bin/pgbouncer"];

/** `needsDatabaseUrl`: tests put PgBouncer in front of DATABASE_URL; the bench names its own server. */
export async function findPgBouncer(needsDatabaseUrl = true): Promise<PgBouncerLookup> {
  let binary: string | undefined;
  for (const candidate of CANDIDATES) {
    try {
      await Deno.stat(candidate);
      binary = candidate;
      break;
    } catch {
      // not there
    }
  }
  if (binary === undefined) {
    return { missing: "pgbouncer is not installed (Debian: apt-get install pgbouncer)" };
  }
  if (needsDatabaseUrl && !Deno.env.get("DATABASE_URL")) {
    return { missing: "DATABASE_URL is not set: PgBouncer needs a PostgreSQL server behind it" };
  }
  return { found: { binary, asUser: Deno.uid() === 0 ? ["runuser", "-u", "postgres", "--"] : [] } };
}

export interface PgBouncerOptions {
  /** Server connections per database/user pair: fewer than the clients that share them. */
  readonly poolSize: number;
  /** The server behind it (default: DATABASE_URL's). */
  readonly upstreamUrl?: string;
}

/** Starts PgBouncer in front of DATABASE_URL's server and waits until it accepts connections. */
export async function startPgBouncer(
  found: { binary: string; asUser: string[] },
  { poolSize, upstreamUrl }: PgBouncerOptions,
): Promise<PgBouncer> {
  const upstream = new URL(upstreamUrl ?? Deno.env.get("DATABASE_URL")!);
  const user = decodeURIComponent(upstream.username || "postgres");
  const port = freePort();
  const dir = await Deno.makeTempDir({ prefix: "wallet-vault-pgbouncer-" });
  // Readable by the `postgres` user that PgBouncer runs as.
  await Deno.chmod(dir, 0o755);
  const config = `[databases]
* = host=${upstream.hostname} port=${upstream.port || 5432}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
auth_type = trust
auth_file = ${dir}/users.txt
pool_mode = transaction
default_pool_size = ${poolSize}
min_pool_size = 0
reserve_pool_size = 0
max_client_conn = 500
server_reset_query =
ignore_startup_parameters =
`;
  await Deno.writeTextFile(`${dir}/pgbouncer.ini`, config, { mode: 0o644 });
  await Deno.writeTextFile(`${dir}/users.txt`, `"${user}" ""\n`, { mode: 0o644 });
  const [command, ...args] = [...found.asUser, found.binary, `${dir}/pgbouncer.ini`];
  const child = new Deno.Command(command, { args, stdout: "null", stderr: "piped" }).spawn();
  const stderr = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let errors = "";
  (async () => {
    for (;;) {
      const { done, value } = await stderr.read();
      if (done) return;
      errors += value;
    }
  })().catch(() => {});

  const stop = async () => {
    try {
      // SIGTERM: immediate shutdown (SIGINT would wait for every client to disconnect).
      child.kill("SIGTERM");
    } catch {
      // already gone
    }
    await child.status;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };

  try {
    await waitForPort(port, () => `pgbouncer did not start: ${errors.slice(0, 500)}`, 10_000);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    port,
    urlFor(database) {
      const url = new URL(upstream);
      url.host = `127.0.0.1:${port}`;
      url.pathname = `/${database}`;
      url.search = "?pgbouncer=true";
      return url.toString();
    },
    stop,
  };
}
