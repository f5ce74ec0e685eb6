/**
 * The machine and the code a bench run measured, for its results file.
 */
import { commandOutput } from "../tests/support/command-output.ts";

/** `postgresAdminUrl`: the server whose version is reported, when an engine found one. */
export async function machine(postgresAdminUrl: string | null) {
  // /proc is read with `cat`: Deno reads it itself only with --allow-all.
  const cpuinfo = await commandOutput("cat", ["/proc/cpuinfo"]) ?? "";
  const cpuModel = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? Deno.build.arch;
  let postgres: string | null = null;
  if (postgresAdminUrl !== null) {
    const { default: postgresJs } = await import("postgres");
    const sql = postgresJs(postgresAdminUrl, { max: 1, onnotice: () => {} });
    try {
      postgres = (await sql`show server_version`)[0].server_version;
    } finally {
      await sql.end({ timeout: 1 });
    }
  }
  return {
    cpuModel,
    cores: navigator.hardwareConcurrency,
    memoryGiB: Math.round(Deno.systemMemoryInfo().total / 2 ** 30),
    os: `${Deno.build.os} ${Deno.build.arch}`,
    deno: Deno.version.deno,
    v8: Deno.version.v8,
    postgres,
    loadAverageAtStart: Deno.loadavg(),
  };
}

export async function commit(): Promise<string> {
  // BENCH_COMMIT: when measuring a copy without .git (git archive), name the commit it holds.
  const given = Deno.env.get("BENCH_COMMIT");
  if (given) return given;
  const head = await commandOutput("git", ["rev-parse", "--short", "HEAD"]);
  if (head === null) return "unknown";
  const status = await commandOutput("git", ["status", "--porcelain", "--untracked-files=no"]);
  return status ? `${head} + uncommitted changes` : head;
}
