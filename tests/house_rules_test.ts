/**
 * The house's structural rules, checked on the tree: no import cycle between modules or between
 * the top-level folders, and no function in the product's code over the length the lint rule
 * (lint/house-rules.ts) allows.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);
const FOLDERS = [
  "protocol",
  "functions",
  "server",
  "scripts",
  "key-scanner",
  "sdk",
  "client",
  "bench",
];
const SKIPPED = /\/(node_modules|dist)\//;

async function sourceFiles(folder: URL): Promise<URL[]> {
  const found: URL[] = [];
  for await (const entry of Deno.readDir(folder)) {
    const url = new URL(entry.name + (entry.isDirectory ? "/" : ""), folder);
    if (SKIPPED.test(url.pathname)) continue;
    if (entry.isDirectory) found.push(...await sourceFiles(url));
    else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith(".d.ts")) found.push(url);
  }
  return found;
}

interface InfoModule {
  specifier: string;
  dependencies?: { code?: { specifier: string }; type?: { specifier: string } }[];
}

/** Every project module's imports (type-only ones included), from `deno info --json`. */
async function importGraph(): Promise<Map<string, string[]>> {
  const files = (await Promise.all(FOLDERS.map((name) => sourceFiles(new URL(`${name}/`, ROOT)))))
    .flat();
  const entry = await Deno.makeTempFile({ suffix: ".ts" });
  try {
    await Deno.writeTextFile(entry, files.map((file) => `import "${file.href}";\n`).join(""));
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", entry],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(output.success, new TextDecoder().decode(output.stderr));
    const { modules } = JSON.parse(new TextDecoder().decode(output.stdout)) as {
      modules: InfoModule[];
    };
    const project = (specifier: string) =>
      specifier.startsWith(ROOT.href) && !SKIPPED.test(specifier);
    const graph = new Map<string, string[]>();
    for (const module of modules) {
      if (!project(module.specifier)) continue;
      const targets = (module.dependencies ?? []).flatMap((dependency) =>
        [dependency.code?.specifier, dependency.type?.specifier]
          .filter((target): target is string => target !== undefined && project(target))
      );
      graph.set(module.specifier.slice(ROOT.href.length), [
        ...new Set(targets.map((target) => target.slice(ROOT.href.length))),
      ]);
    }
    return graph;
  } finally {
    await Deno.remove(entry);
  }
}

/** The strongly connected components of more than one node, or of one that imports itself. */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, next);
    low.set(node, next++);
    stack.push(node);
    onStack.add(node);
    for (const target of graph.get(node) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node)!, index.get(target)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component);
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

const graph = await importGraph();

Deno.test("the cycle finder finds a cycle of two and one of three, and nothing in a chain", () => {
  const made = new Map([["a", ["b"]], ["b", ["a", "c"]], ["c", ["d"]], ["d", ["e"]], ["e", [
    "c",
  ]], ["f", ["a"]]]);
  assert.deepEqual(cycles(made).map((cycle) => cycle.sort()), [["c", "d", "e"], ["a", "b"]]);
  assert.deepEqual(cycles(new Map([["a", ["b"]], ["b", []]])), []);
});

Deno.test("no module imports itself back through others, type-only imports included", () => {
  assert.ok(graph.size > 100, `only ${graph.size} modules found`);
  assert.deepEqual(cycles(graph), []);
});

Deno.test("no two top-level folders import each other, directly or through a third", () => {
  const folders = new Map<string, string[]>();
  for (const [module, targets] of graph) {
    const from = module.split("/")[0];
    const to = targets.map((target) => target.split("/")[0]).filter((folder) => folder !== from);
    folders.set(from, [...new Set([...(folders.get(from) ?? []), ...to])]);
  }
  assert.deepEqual(cycles(folders), []);
});

/** The project's folders `folder`'s modules import, itself left out. */
function importedFolders(folder: string): string[] {
  const reached = new Set<string>();
  for (const [module, targets] of graph) {
    if (!module.startsWith(`${folder}/`)) continue;
    for (const target of targets) reached.add(target.split("/")[0]);
  }
  reached.delete(folder);
  return [...reached].sort();
}

Deno.test("protocol/, which the functions and the client package both bundle, imports nothing of the project's", () => {
  assert.ok([...graph.keys()].some((module) => module.startsWith("protocol/")));
  assert.deepEqual(importedFolders("protocol"), []);
});

Deno.test("the client package's sources import only each other and protocol/", () => {
  assert.deepEqual(importedFolders("sdk"), ["protocol"]);
});

type LintReport = { diagnostics: { code: string; filename: string }[] };

/** `deno lint --json` with the project's configuration (its plugins included) on `path`. */
async function lint(path: string): Promise<LintReport> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["lint", "--json", "--config", new URL("deno.json", ROOT).pathname, path],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return JSON.parse(new TextDecoder().decode(output.stdout)) as LintReport;
}

const tooLong = ({ diagnostics }: LintReport) =>
  diagnostics.filter((found) => found.code === "house/max-function-lines");

Deno.test("no function in functions/, protocol/, server/, sdk/ or key-scanner/ is over 150 lines", async () => {
  const long = [];
  for (const folder of ["functions/", "protocol/", "server/", "sdk/", "key-scanner/"]) {
    long.push(...tooLong(await lint(folder)));
  }
  assert.deepEqual(long.map((found) => found.filename), []);
});

Deno.test("the length rule reports a function of 151 lines in server/, and not one of 150", async () => {
  const body = (lines: number) =>
    `export function long(): number {\n${"  void 0;\n".repeat(lines - 3)}  return 0;\n}\n`;
  const outside = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${outside}/server`);
    for (const [lines, reported] of [[151, true], [150, false]] as const) {
      await Deno.writeTextFile(`${outside}/server/probe.ts`, body(lines));
      assert.equal(
        tooLong(await lint(`${outside}/server/probe.ts`)).length > 0,
        reported,
        `${lines}`,
      );
    }
  } finally {
    await Deno.remove(outside, { recursive: true });
  }
});
