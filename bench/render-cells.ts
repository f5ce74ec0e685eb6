/** Table cells of the bench report that flag what went wrong in a measurement. */
import { show } from "./markdown.ts";
import type { BenchResults } from "./results-types.ts";

/** A route row's errors cell: its own, its floor's, and runs whose proofs ran out, flagged. */
export function errorsCell(row: BenchResults["summary"]["rows"][number]): string {
  const floorErrors = row.floorErrors ?? 0;
  const flags = [
    ...(floorErrors > 0 ? [`**floor: ${floorErrors}**`] : []),
    ...proofsRanOutFlag(row.proofsRanOut),
  ];
  return [row.errors > 0 ? `**${row.errors}**` : String(row.errors), ...flags].join(", ");
}

/** "proofs ran out in N runs", when they did: that measurement was cut short. */
function proofsRanOutFlag(runs: number | undefined): string[] {
  return runs ? [`proofs ran out in ${runs} run${runs === 1 ? "" : "s"}`] : [];
}

/** A growth cell: p50 / p99, flagged with its errors and proofs that ran out. */
export function growthCell(g: BenchResults["summary"]["growth"][number]): string {
  const flags = [
    ...(g.errors ? [`**${g.errors} error${g.errors === 1 ? "" : "s"}**`] : []),
    ...proofsRanOutFlag(g.proofsRanOut),
  ];
  const figures = `${show(g.p50Ms)} / ${show(g.p99Ms)}`;
  return flags.length === 0 ? figures : `${figures} (${flags.join(", ")})`;
}
