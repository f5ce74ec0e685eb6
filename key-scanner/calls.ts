/**
 * Values given to a credential's name through a call or as a fallback, in code: a default
 * (`os.getenv("MISTRAL_API_KEY", "…")`, `os.environ.get(…)`, `setdefault`), a value set
 * (`os.putenv`, Go's `os.Setenv`, `Deno.env.set`, Rust's `std::env::set_var`, a header added),
 * `process.env.X || "…"` and `?? "…"` (Python's `or`). The shell's `${X:-…}` is an assignment's
 * value already (assignments.ts).
 */
import { valueAt } from "./assignments.ts";
import type { Report } from "./finding.ts";
import { isCredentialName } from "./names.ts";

/**
 * A call whose first argument is a quoted name and whose second starts where the match ends
 * (Python's `default=` allowed): group 2 is the name.
 */
const CALL_WITH_NAME =
  /\([ \t]*(["'`])([A-Za-z_][A-Za-z0-9_.-]*)\1[ \t]*,[ \t]*(?:default[ \t]*=[ \t]*)?/y;

/**
 * A name read right before a fallback operator: bare (`process.env.X`), or quoted in a subscript
 * or call (`process.env["X"]`, `os.getenv("X")`); group 1 is the name.
 */
const NAME_BEFORE = /(?<![A-Za-z0-9_$])([A-Za-z_][A-Za-z0-9_]*)["'`]?[ \t]*[\])]?[ \t]*$/;
/** `||`, `??` or Python's `or`, then white space up to a quoted literal's opening quote. */
const FALLBACK = /(?:\|\||\?\?|(?<=[\s)\]])or)[ \t]*(?=["'`])/g;
/** How far back from the operator the name is looked for. */
const NAME_LOOKBACK = 160;

/** Each quoted literal given to a credential's name by a call or as a fallback. */
export function findCallValues(text: string, report: Report): void {
  // Only where a parenthesis opens on a quote is the expression tried.
  for (let paren = text.indexOf("("); paren >= 0; paren = text.indexOf("(", paren + 1)) {
    const next = text[paren + 1];
    if (next !== '"' && next !== "'" && next !== "`" && next !== " ") continue;
    CALL_WITH_NAME.lastIndex = paren;
    const match = CALL_WITH_NAME.exec(text);
    if (match === null) continue;
    reportValue(text, match[2], paren + match[0].length, "value given to", report);
  }
  FALLBACK.lastIndex = 0;
  for (let match = FALLBACK.exec(text); match !== null; match = FALLBACK.exec(text)) {
    const name = NAME_BEFORE.exec(
      text.slice(Math.max(0, match.index - NAME_LOOKBACK), match.index),
    );
    if (name !== null) {
      reportValue(text, name[1], match.index + match[0].length, "fallback value for", report);
    }
  }
}

/** A quoted literal at `at` given to `name`: in code a bare value there is an expression. */
function reportValue(text: string, name: string, at: number, kind: string, report: Report): void {
  if (!isCredentialName(name)) return;
  const given = valueAt(text, at, false)?.given;
  if (given === undefined || given === null) return;
  report(given.start, given.start + given.value.length, given.value, `${kind} ${name}`);
}
