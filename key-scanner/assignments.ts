/**
 * Values given to a credential's name: `NAME=value`, `name: value`, `"name": "value"`,
 * `client.api_key = …`, `--api-key …`, Dockerfile's `ENV NAME value`, in any file format.
 */
import type { Report } from "./finding.ts";
import { isCredentialName } from "./names.ts";
import { looksLikeSecret } from "./values.ts";

/**
 * The value a name is given, read where the name's match ends: a quoted string (groups 1 to 3) or a
 * bare token (group 4). A bare token runs on through `&` (Django's generated SECRET_KEY has them),
 * so one in a query string carries the parameters after it.
 */
const VALUE_AT = /(?:"([^"\n]*)"|'([^'\n]*)'|`([^`\n]*)`|([^\s,;#'"`)}\]]+))/y;

/**
 * Where a name is given a value; group 1 is the name's quote, 2 the name, and the value starts
 * where the match ends (VALUE_AT), read only after a credential's name: the search goes on inside
 * other names' values, so an assignment within one (`Client(api_key=\"…\")` in a notebook line,
 * JSON held in a JSON string) is found too.
 *
 * - A name (optionally quoted, optionally after `export`, `.`, `[` or `--` as in
 *   `client.api_key`, `process.env.X`, `os.environ["X"]`, `--api-key`, optionally then `]`), then
 *   `=` or `:` (not `==`, `=>`, `::`). A name never starts inside a word (after a letter and
 *   dashes), which keeps a long `a-b-c-…` or `--a--a…` linear. An escaped `[\"X\"]` is matched
 *   blanked, as `[ "X" ]`.
 * - Dockerfile's `ENV NAME value`, without `=`.
 */
const ASSIGNMENTS: readonly RegExp[] = [
  new RegExp(
    String.raw`(?<![A-Za-z0-9_$])(?<![A-Za-z0-9_]-+)(["']?)([A-Za-z_][A-Za-z0-9_-]*)\1` +
      String.raw`(?:[ \t]*\])?[ \t]*` +
      String.raw`(?::(?![:=])|=(?![=>~]))[ \t]*`,
    "g",
  ),
  new RegExp(String.raw`^[ \t]*ENV[ \t]+()([A-Za-z_][A-Za-z0-9_]*)[ \t]+`, "g"),
];

/**
 * Files in which a bare (unquoted) value after `name =` or `name:` is code, not a literal:
 * `apiKey: options.apiKey` in TypeScript names a variable. Everywhere else (env files, YAML,
 * shell, prompts, recipes of any format) a bare value is the value itself.
 */
const CODE_EXTENSIONS = new Set([
  "ts",
  "tsx",
  "mts",
  "cts",
  "js",
  "jsx",
  "mjs",
  "cjs",
  "json",
  "jsonc",
  "py",
  "go",
  "rs",
  "rb",
  "java",
  "kt",
  "swift",
  "php",
  "cs",
  "c",
  "h",
  "cpp",
  "sql",
  "html",
  "css",
]);

/** Whether a bare value after `name =` in `file` is the value itself (see CODE_EXTENSIONS). */
export function bareValueIsLiteral(file: string): boolean {
  return !CODE_EXTENSIONS.has(extensionOf(file));
}

function extensionOf(file: string): string {
  const name = file.slice(file.lastIndexOf("/") + 1).toLowerCase();
  const dot = name.lastIndexOf(".");
  return dot > 0 ? name.slice(dot + 1) : "";
}

/** A literal read where a value starts: where it is, and where the text after it resumes. */
export interface GivenValue {
  readonly start: number;
  readonly value: string;
  /** Just past the value and its closing quote. */
  readonly next: number;
}

/**
 * The value written at `start` when it looks like a secret (a bare one only where
 * `bareIsLiteral`); `next` is set even when it does not, so a search can go on after it.
 */
export function valueAt(
  text: string,
  start: number,
  bareIsLiteral: boolean,
): { given: GivenValue | null; next: number } | null {
  VALUE_AT.lastIndex = start;
  const given = VALUE_AT.exec(text);
  if (given === null) return null;
  const next = start + given[0].length;
  const quoted = given[1] ?? given[2] ?? given[3];
  if (quoted === undefined && !bareIsLiteral) return { given: null, next };
  // Trimmed: an escape at either end of a quoted value (`"<key>\n"`) was blanked to spaces.
  const raw = quoted ?? given[4];
  const value = raw.trim();
  if (!looksLikeSecret(value)) return { given: null, next };
  const end = next - (quoted === undefined ? 0 : 1);
  const at = end - raw.trimStart().length;
  return { given: { start: at, value, next }, next };
}

/** How far back dotted names before a name are looked for (`spring.ai.mistral.api.key`). */
const DOTTED_LOOKBACK = 128;
/** What a name combined with others must end in to name a credential (isCredentialName). */
const CREDENTIAL_ENDING = /(?:key|token|secret|pat)[0-9]*$/i;

/**
 * The name a value is given to, as a credential's name: the name itself, or with the dotted
 * names before it (`mistral.api.key`), or at a line's start under an INI section (`[mistral]`
 * then `key = …`); null when none names a credential.
 */
function credentialName(
  text: string,
  at: number,
  name: string,
  section: string | null,
): string | null {
  if (isCredentialName(name)) return name;
  if (!CREDENTIAL_ENDING.test(name)) return null;
  if (text[at - 1] === ".") {
    const dotted = dottedBefore(text, at) + name;
    if (isCredentialName(dotted)) return dotted;
  }
  if (section !== null && /^[ \t]*["']?$/.test(text.slice(0, at))) {
    if (isCredentialName(`${section}.${name}`)) return `[${section}] ${name}`;
  }
  return null;
}

/** The names and dots right before `at` (`mistral.api.`), read backwards. */
function dottedBefore(text: string, at: number): string {
  let from = at;
  const stop = Math.max(0, at - DOTTED_LOOKBACK);
  while (from > stop && /[A-Za-z0-9_.-]/.test(text[from - 1])) from--;
  return text.slice(from, at).replace(/^[^A-Za-z_]+/, "");
}

/**
 * Each literal given to a credential's name that looks like a secret; a bare (unquoted) one only
 * where `bareIsLiteral`. `section`: the INI section the line is in, if any.
 */
export function findAssignments(
  text: string,
  bareIsLiteral: boolean,
  report: Report,
  section: string | null = null,
): void {
  for (const pattern of ASSIGNMENTS) {
    pattern.lastIndex = 0;
    for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
      const nameAt = match.index + match[0].indexOf(match[2], match[1].length);
      const name = credentialName(text, nameAt, match[2], section);
      if (name === null) continue;
      const read = valueAt(text, match.index + match[0].length, bareIsLiteral);
      if (read === null) continue;
      // A credential's value is its own: the search goes on after it. Other names' values are
      // searched (an assignment within them), so each character is read about once.
      pattern.lastIndex = read.next;
      const { given } = read;
      if (given === null) continue;
      report(
        given.start,
        given.start + given.value.length,
        given.value,
        `value assigned to ${name}`,
      );
    }
  }
}
