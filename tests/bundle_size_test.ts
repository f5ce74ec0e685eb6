/**
 * Supabase refuses a function whose module graph (`deno info functions/<name>/index.ts`) is over
 * 20 MB. Each stays under 12 MB, leaving headroom, and none reaches PGlite or anything else that
 * only the local server, the scripts or the SDK need: its own files are in functions/ and
 * protocol/.
 */
import assert from "node:assert/strict";

const BUDGET_BYTES = 12 * 1024 * 1024;
const FUNCTIONS = ["wallet-proof", "user-secrets", "api"];
const ROOT = new URL("../", import.meta.url);

interface ModuleGraph {
  modules: { specifier: string; kind?: string; npmPackage?: string }[];
  npmPackages: Record<string, { name: string; dependencies?: string[] }>;
}

/** The npm packages the graph really reaches (npmPackages lists the whole lockfile's). */
function reachedPackages(graph: ModuleGraph): Set<string> {
  const reached = new Set<string>();
  const visit = (id: string) => {
    if (reached.has(id) || !graph.npmPackages[id]) return;
    reached.add(id);
    for (const dependency of graph.npmPackages[id].dependencies ?? []) visit(dependency);
  };
  for (const module of graph.modules) if (module.npmPackage) visit(module.npmPackage);
  return new Set([...reached].map((id) => graph.npmPackages[id].name));
}

async function denoInfo(args: string[]): Promise<string> {
  const { success, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["info", ...args],
    cwd: ROOT.pathname,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(success, new TextDecoder().decode(stderr));
  return new TextDecoder().decode(stdout);
}

/** "size: 9.27MB" as `deno info` prints it: the number Supabase compares with its limit. */
function reportedBytes(text: string): number {
  const match = /^size: ([\d.]+)(B|KB|MB|GB)$/m.exec(text);
  assert.ok(match, `no size in deno info's output:\n${text.slice(0, 300)}`);
  const unit = { B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3 }[match[2] as "B"];
  return Number(match[1]) * unit;
}

for (const name of FUNCTIONS) {
  Deno.test(`the ${name} function's module graph is under 12 MB and holds only deployable code`, async () => {
    const entry = `functions/${name}/index.ts`;
    const size = reportedBytes(await denoInfo([entry]));
    assert.ok(
      size < BUDGET_BYTES,
      `${entry} is ${(size / 1024 ** 2).toFixed(2)} MB by deno info; the budget is 12 MB`,
    );
    const graph: ModuleGraph = JSON.parse(await denoInfo(["--json", entry]));
    const packages = reachedPackages(graph);
    assert.ok(packages.has("postgres"), "the graph walk found the driver");
    assert.ok(!packages.has("@electric-sql/pglite"), "PGlite is in a function's graph");
    for (const { specifier } of graph.modules) {
      if (!specifier.startsWith("file:")) continue;
      const path = specifier.slice(ROOT.href.length);
      // The functions' own code and the protocol they share with the client package, nothing else.
      assert.ok(/^(functions|protocol)\//.test(path), `${entry} reaches ${path}`);
    }
  });
}
