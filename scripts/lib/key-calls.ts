/**
 * Values given to a credential's name through a call or as a fallback, in code: a default
 * (`os.getenv("MISTRAL_API_KEY", "…")`, `os.environ.get(…)`, `setdefault`), a value set
 * (`os.putenv`, Go's `os.Setenv`, `Deno.env.set`, Rust's `std::env::set_var`, a header added),
 * `process.env.X || "…"` and `?? "…"` (Python's `or`). The shell's `${X:-…}` is an assignment's
 * value already (key-assignments.ts).
 */
import { valueAt } from "./key-assignments.ts";
import type { Report } from "./key-finding.ts";
import { isCredentialName } from "./key-names.ts";

/**
 * A call whose first argument is a quoted name and whose second starts where the match ends
 * (Python's `default=` allowed): group 2 is the name.
 */
const CALL_WITH_NAME =
  /\([ \t]*(["'`])([A-Za-z_][A-Za-z0-9_.-]*)\1[ \t]*,[ \t]*(?:default[ \t]*=[ \t]*)?/g;

/**
 * A name read, then `||`, `??` or `or`, and the fallback where the match ends: the name bare
 * (`process.env.X`), quoted in a subscript or call (`process.env["X"]`, `os.getenv("X")`).
 */
const FALLBACK =
  /(?<![A-Za-z0-9_$])([A-Za-z_][A-Za-z0-9_]*)["'`]?[ \t]*[\])]?[ \t]*(?:\|\||\?\?|\bor\b)[ \t]*/g;

/** Each quoted literal given to a credential's name by a call or as a fallback. */
export function findCallValues(text: string, report: Report): void {
  if (text.includes("(")) findAfter(CALL_WITH_NAME, 2, text, "value given to", report);
  if (text.includes("||") || text.includes("??") || text.includes(" or ")) {
    findAfter(FALLBACK, 1, text, "fallback value for", report);
  }
}

/** Quoted literals only: in code a bare value there is an expression. */
function findAfter(
  pattern: RegExp,
  group: number,
  text: string,
  kind: string,
  report: Report,
): void {
  for (const match of text.matchAll(pattern)) {
    const name = match[group];
    if (!isCredentialName(name)) continue;
    const given = valueAt(text, match.index + match[0].length, false)?.given;
    if (given === undefined || given === null) continue;
    report(given.start, given.start + given.value.length, given.value, `${kind} ${name}`);
  }
}
