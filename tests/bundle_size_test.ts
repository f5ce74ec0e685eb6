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
  roots: string[];
  modules: {
    specifier: string;
    kind?: string;
    npmPackage?: string;
    dependencies?: { code?: { specifier: string }; isDynamic?: boolean }[];
  }[];
  npmPackages: Record<string, { name: string; dependencies?: string[] }>;
  /** npm:postgres@3.4.9 (as imported) → npm:/postgres@3.4.9 (as listed in modules). */
  redirects: Record<string, string>;
}

/** The modules a process loads before it runs its entry: the static imports, transitively. */
function staticallyReached(graph: ModuleGraph): Set<string> {
  const bySpecifier = new Map(graph.modules.map((module) => [module.specifier, module]));
  const reached = new Set<string>();
  const visit = (imported: string) => {
    const specifier = graph.redirects[imported] ?? imported;
    if (reached.has(specifier)) return;
    reached.add(specifier);
    for (const dependency of bySpecifier.get(specifier)?.dependencies ?? []) {
      if (!dependency.isDynamic && dependency.code) visit(dependency.code.specifier);
    }
  };
  graph.roots.forEach(visit);
  return reached;
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

for (const name of FUNCTIONS) {
  Deno.test(`the ${name} function starts without any route's module, which its deploy still carries`, async () => {
    const graph: ModuleGraph = JSON.parse(await denoInfo(["--json", `functions/${name}/index.ts`]));
    const atStart = staticallyReached(graph);
    // What the handlers' routes import on demand (a Route's `load`, router.ts), each with a literal specifier.
    const onDemand = graph.modules.flatMap((module) =>
      /\/functions\/(wallet-proof|user-secrets|api)\/handler\.ts$/.test(module.specifier)
        ? (module.dependencies ?? []).filter((d) => d.isDynamic).map((d) => d.code!.specifier)
        : []
    );
    assert.ok(onDemand.length >= (name === "user-secrets" ? 8 : 11), onDemand.join("\n"));
    const inGraph = new Set(graph.modules.map((module) => module.specifier));
    for (const specifier of onDemand) {
      assert.ok(inGraph.has(specifier), `${specifier} is not in the deploy's graph`);
      assert.ok(!atStart.has(specifier), `${specifier} is loaded at start`);
    }
    // Request validation (zod) comes with the first route that reads a body, not at start.
    const startPackages = graph.modules.filter((m) => m.npmPackage && atStart.has(m.specifier))
      .map((m) => graph.npmPackages[m.npmPackage!].name);
    assert.deepEqual(
      startPackages.sort(),
      name === "wallet-proof" ? ["postgres"] : [
        "@noble/hashes",
        "postgres",
      ],
    );
  });
}
