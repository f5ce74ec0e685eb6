/**
 * Markdown for the generated tables: a figure with its spread, and a table.
 */
import type { Spread } from "./results-types.ts";

/** A figure as `median (min–max)`, or the median alone after a single run. */
export function show(value: Spread | null, digits = 2, unit = ""): string {
  if (value === null) return "";
  const median = `${value.median.toFixed(digits)}${unit}`;
  return value.min === value.max
    ? median
    : `${median} (${value.min.toFixed(digits)}–${value.max.toFixed(digits)})`;
}

export function table(header: string[], rows: string[][], right: boolean[]): string {
  return [
    `| ${header.join(" | ")} |`,
    `|${right.map((r) => (r ? "---:" : "---")).join("|")}|`,
    ...rows.map((cells) => `| ${cells.map((c) => c.replaceAll("|", "\\|")).join(" | ")} |`),
  ].join("\n");
}
