/**
 * The tables of one bench run (bench/results/latest.json) as Markdown: against the targets, the
 * in-process sign-in check, routes and floors per engine, cold start, growth, and the run's notes.
 */
import { alsoRowSuffix, FLOOR_CHANGES, FLOOR_CHANGES_REASON } from "./floor-changes.ts";
import { besideRowSuffix, GUARDED_FLOOR_CHANGE } from "./floor-way.ts";
import { show, table } from "./markdown.ts";
import { errorsCell, growthCell } from "./render-cells.ts";
import type { BenchResults, Spread } from "./results-types.ts";
import { TARGETS } from "./targets.ts";

function targetLines(results: BenchResults): string[] {
  const { meta, summary } = results;
  const lines: string[] = [];
  const rows: string[][] = [];
  const misses: string[] = [];
  for (const engine of meta.engines) {
    for (const target of TARGETS) {
      const row = summary.rows.find((r) => r.id === `${engine.name}/${target.route}`);
      if (!row) continue;
      const verdict = (ratio: Spread | null, limit: number, which: "at1" | "loaded") => {
        if (!engine.targeted) return "not targeted";
        if (ratio === null) return "not measured";
        if (row.errors > 0) return "**no** (errors)";
        // A floor that failed is no yardstick (a fast error is no floor at all).
        if ((row.floorErrors ?? 0) > 0) return "**no** (floor errors)";
        if (ratio.median <= limit) return "yes";
        const where = which === "at1" ? "at concurrency 1" : `at concurrency ${meta.concurrency}`;
        const cause = target.causes?.[engine.name]?.[which];
        misses.push(
          `- ${engine.name}, ${target.label} ${where}: ${ratio.median.toFixed(2)}× > ${limit}×. ${
            cause ?? "No cause recorded in bench/targets.ts yet."
          }`,
        );
        return "**no**";
      };
      rows.push([
        engine.name,
        target.label,
        `${target.at1}×`,
        show(row.ratioAt1, 2, "×"),
        verdict(row.ratioAt1, target.at1, "at1"),
        `${target.loaded}×`,
        show(row.ratio, 2, "×"),
        verdict(row.ratio, target.loaded, "loaded"),
      ]);
    }
  }
  lines.push(
    table(
      [
        "engine",
        "route",
        "target at 1",
        "ratio at 1",
        "met",
        `target at ${meta.concurrency}`,
        `ratio at ${meta.concurrency}`,
        "met",
      ],
      rows,
      [false, false, true, true, false, true, true, false],
    ),
  );
  if (misses.length > 0) lines.push("", "Missed, and why:", "", ...misses);
  return lines;
}

/** Each route against its floor without the guard (before) and behind it (now), side by side. */
function floorChangeLines(results: BenchResults): string[] {
  return beforeAndNowLines(
    results,
    GUARDED_FLOOR_CHANGE,
    TARGETS.map((target) => ({ route: target.route, beforeSuffix: besideRowSuffix("direct") })),
    ["floor without the guard (before)", "floor behind it (now)"],
  );
}

/** Each route whose floor changed (bench/floor-changes.ts) against its old and its new floor. */
function floorsChangedLines(results: BenchResults): string[] {
  return beforeAndNowLines(
    results,
    FLOOR_CHANGES_REASON,
    FLOOR_CHANGES.map((change) => ({
      route: change.route,
      beforeSuffix: alsoRowSuffix(change.before),
      showFloors: true,
    })),
    ["before", "now"],
  );
}

/**
 * A reason, then a table of each route's ratios against a floor before and now: the route's own
 * row, and the row whose id ends in `beforeSuffix` (measured beside it, in the same run).
 */
function beforeAndNowLines(
  results: BenchResults,
  reason: string,
  routes: readonly { route: string; beforeSuffix: string; showFloors?: boolean }[],
  [before, now]: readonly [string, string],
): string[] {
  const { meta, summary } = results;
  const showFloors = routes.some((r) => r.showFloors);
  const rows: string[][] = [];
  for (const engine of meta.engines) {
    for (const { route, beforeSuffix } of routes) {
      const id = `${engine.name}/${route}`;
      const nowRow = summary.rows.find((r) => r.id === id);
      const beforeRow = summary.rows.find((r) => r.id === `${id}${beforeSuffix}`);
      if (!nowRow || !beforeRow) continue;
      rows.push([
        engine.name,
        TARGETS.find((target) => target.route === route)?.label ?? route,
        ...(showFloors ? [beforeRow.baseline ?? "", nowRow.baseline ?? ""] : []),
        show(beforeRow.ratioAt1, 2, "×"),
        show(nowRow.ratioAt1, 2, "×"),
        show(beforeRow.ratio, 2, "×"),
        show(nowRow.ratio, 2, "×"),
      ]);
    }
  }
  if (rows.length === 0) return [];
  const c = meta.concurrency;
  const ratios = [
    `ratio at 1, ${before}`,
    `ratio at 1, ${now}`,
    `ratio at ${c}, before`,
    `ratio at ${c}, now`,
  ];
  return [
    "",
    reason,
    "",
    table(
      ["engine", "route", ...(showFloors ? ["floor before", "floor now"] : []), ...ratios],
      rows,
      [false, false, ...(showFloors ? [false, false] : []), true, true, true, true],
    ),
  ];
}

/** The generated tables of one bench run, their headings at `headingLevel`. */
export function render(results: BenchResults, headingLevel = 2): string {
  const { meta, summary, notes } = results;
  const m = meta.machine;
  const h = "#".repeat(headingLevel);
  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(" / ");
  const out: string[] = [];
  out.push(
    "_Generated by `deno task bench:report` from `bench/results/latest.json`; not edited by hand._",
    "",
    `Taken on commit \`${meta.commit}\`, ${
      meta.date.slice(0, 16).replace("T", " ")
    } UTC, on ${m.cpuModel} (${m.cores} cores, ${m.memoryGiB} GiB), ${m.os}, Deno ${m.deno} (V8 ${m.v8})${
      m.postgres ? `, PostgreSQL ${m.postgres} on the same machine` : ""
    }. Load average (1 / 5 / 15 min) ${load(m.loadAverageAtStart)} at the start, ${
      load(m.loadAverageAtEnd)
    } at the end. ${meta.runs} run${meta.runs === 1 ? "" : "s"} of the whole suite${
      meta.runs > 1 ? ": each figure is the median of the runs, their min–max in brackets" : ""
    }; concurrency ${meta.concurrency}, ${meta.durationMs} ms per route (${meta.singleMs} ms at 1); ${
      Math.round(meta.totalSeconds / 60)
    } min in all.`,
    "",
    `${h} Against the targets`,
    "",
    "Each route's median ratio to its floor (bench/targets.ts); PGlite is reported, not targeted.",
    "",
    ...targetLines(results),
    ...floorChangeLines(results),
    ...floorsChangedLines(results),
    "",
    `${h} Sign-in check, in process`,
    "",
    table(
      ["measure", "p50 ms", "p99 ms", "calls/s", "compared with", "ratio"],
      summary.rows.filter((r) => r.engine === "in-process").map((r) => [
        r.measure,
        show(r.p50Ms, 3),
        show(r.p99Ms, 3),
        show(r.rps, 0),
        r.baseline ?? "",
        show(r.ratio, 2, "×"),
      ]),
      [false, true, true, true, false, true],
    ),
  );
  for (const engine of meta.engines) {
    const rows = summary.rows.filter((r) => r.engine === engine.name);
    out.push(
      "",
      `${h} Routes and floors: ${engine.name} (\`${engine.storage}\`)`,
      "",
      table(
        [
          "measure",
          `p50 ms (c=${meta.concurrency})`,
          "p99 ms",
          "req/s",
          "server CPU µs/req",
          "floor",
          "ratio",
          "p50 ms at 1",
          "ratio at 1",
          "errors",
        ],
        rows.map((r) => [
          r.measure,
          show(r.p50Ms),
          show(r.p99Ms),
          show(r.rps, 0),
          show(r.cpuUsPerRequest, 0),
          r.baseline ? `${r.baseline} (${show(r.baselineP50Ms)} ms)` : "",
          show(r.ratio, 2, "×"),
          show(r.p50At1Ms),
          show(r.ratioAt1, 2, "×"),
          errorsCell(r),
        ]),
        [false, true, true, true, true, false, true, true, true, true],
      ),
    );
  }
  if (summary.coldStart.length > 0) {
    out.push(
      "",
      `${h} Cold start`,
      "",
      "Process start to the first successful response; the handler module's import alone.",
      "",
      table(
        [
          "engine",
          "function",
          "first response ms",
          "handler import ms",
          "first response − import ms",
        ],
        summary.coldStart.map((c) => [
          c.engine,
          c.function,
          show(c.firstResponseMs, 0),
          show(c.importMs, 0),
          show(c.overImportMs, 0),
        ]),
        [false, false, true, true, true],
      ),
    );
  }
  if (summary.growth.length > 0) {
    const measures = [...new Set(summary.growth.map((g) => g.measure))];
    const rows: string[][] = [];
    for (const engine of [...new Set(summary.growth.map((g) => g.engine))]) {
      for (const creators of [...new Set(summary.growth.map((g) => g.creators))]) {
        rows.push([
          engine,
          creators.toLocaleString("en"),
          ...measures.map((measure) => {
            const g = summary.growth.find((x) =>
              x.engine === engine && x.creators === creators && x.measure === measure
            );
            return g ? growthCell(g) : "";
          }),
        ]);
      }
    }
    out.push(
      "",
      `${h} Growth with the number of creators`,
      "",
      table(
        ["engine", "creators", ...measures.map((m) => `${m} p50 / p99 ms`)],
        rows,
        [false, true, ...measures.map(() => true)],
      ),
    );
  }
  out.push("", ...notes.map((note) => `- ${note}`));
  return out.join("\n");
}
