/**
 * `deno task bench:report`: the published performance tables, generated from a bench run
 * (bench/results/latest.json, or the file named as the first argument) and never edited by hand.
 * Writes bench/README.md whole (the only place the tables are published; the README and
 * docs/performance.md link to it), then runs `deno fmt` on it so `deno fmt --check` stays clean.
 */
import { table } from "./markdown.ts";
import { render } from "./render.ts";
import type { BenchResults, ProfileResults } from "./results-types.ts";

/** bench/results/profile.json (deno task bench:profile) as one table per route. */
export function renderProfile(profile: ProfileResults): string {
  const out = [
    "## Where one request's time goes (PostgreSQL, in process)",
    "",
    `From \`deno task bench:profile\` (\`bench/results/profile.json\`), taken ${
      profile.date.slice(0, 16).replace("T", " ")
    } UTC on commit \`${profile.commit ?? "unknown"}\`, Deno ${profile.deno}${
      profile.loadAverage
        ? `, load average ${profile.loadAverage.map((x) => x.toFixed(2)).join(" / ")} at the end`
        : ""
    }: each layer timed on its own, one call at a time, median of ${
      profile.rounds * profile.calls
    } calls in ${profile.rounds} interleaved rounds. "what-if" rows measure a change outside \`bench/\` in a throwaway database.`,
  ];
  for (const [route, steps] of Object.entries(profile.results)) {
    out.push(
      "",
      `### ${route}`,
      "",
      table(["layer", "µs"], steps.map((s) => [s.name, s.us.toFixed(0)]), [false, true]),
    );
  }
  return out.join("\n");
}

/** bench/README.md, whole: the run's tables, then the latest profile when there is one. */
export function renderPage(results: BenchResults, profile: ProfileResults | null): string {
  return [
    "# Benchmark results",
    "",
    "The latest `deno task bench` run (`bench/results/latest.json`). How to run it, how to read it and",
    "what the numbers led to: [docs/performance.md](../docs/performance.md).",
    "",
    render(results, 2),
    ...(profile === null ? [] : ["", renderProfile(profile)]),
    "",
  ].join("\n");
}

if (import.meta.main) {
  const root = new URL("../", import.meta.url);
  const input = Deno.args[0] ?? Deno.env.get("BENCH_OUT") ?? "bench/results/latest.json";
  const results: BenchResults = JSON.parse(await Deno.readTextFile(new URL(input, root)));
  const benchReadmePath = new URL("bench/README.md", root);
  // The latest layer-by-layer profile (deno task bench:profile), when there is one.
  let profile: ProfileResults | null = null;
  try {
    profile = JSON.parse(await Deno.readTextFile(new URL("bench/results/profile.json", root)));
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  await Deno.writeTextFile(benchReadmePath, renderPage(results, profile));
  const fmt = await new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--quiet", benchReadmePath.pathname],
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (!fmt.success) throw new Error("deno fmt failed on the generated tables");
  console.error(`wrote bench/README.md from ${input}`);
}
