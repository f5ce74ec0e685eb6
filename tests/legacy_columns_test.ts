/**
 * Legacy per-profile columns named like profiles.*_api_key are not read by the
 * runtime; provider keys live only in the vault. This walks every runtime source file and fails
 * on any query of such a column: qualified (`profiles.x_api_key`), inside a SQL string that names
 * the profiles table, or through a supabase-js `.from("profiles")` chain.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);
/** Code that runs: the functions, the local server, operator scripts, the browser client, bench. */
const RUNTIME_DIRECTORIES = [
  "functions",
  "protocol",
  "server",
  "scripts",
  "client",
  "sdk",
  "bench",
];
const SOURCE = /\.(?:[cm]?[jt]sx?|sql|html)$/;

interface LegacyRead {
  readonly file: string;
  readonly line: number;
  readonly snippet: string;
}

const QUALIFIED = /\bprofiles"?\s*\.\s*"?[A-Za-z0-9_]*_api_key\b/gi;
const STRING_LITERAL = /"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`/g;
const SQL_STATEMENT = /[^;]+/g;
const PROFILES_TABLE = /\bprofiles\b/i;
const API_KEY_COLUMN = /\b[A-Za-z0-9_]*_api_key\b/i;
/** `.from("profiles")`, then the rest of the statement (up to the next `;`). */
const CLIENT_CHAIN = /\.from\(\s*["'`](?:public\.)?profiles["'`]\s*\)[^;]*/g;

/** Every place in `text` that reads a profiles.*_api_key column, by the column's line. */
function legacyReads(text: string, file: string): LegacyRead[] {
  const found = new Map<number, LegacyRead>();
  const record = (index: number, snippet: string) => {
    const line = text.slice(0, index).split("\n").length;
    found.set(line, { file, line, snippet: snippet.replace(/\s+/g, " ").trim().slice(0, 120) });
  };
  for (const match of text.matchAll(QUALIFIED)) record(match.index, match[0]);
  // In a .sql file the SQL is the text itself: each statement counts as one SQL string.
  const strings = file.endsWith(".sql") ? SQL_STATEMENT : STRING_LITERAL;
  for (const match of text.matchAll(strings)) {
    const column = API_KEY_COLUMN.exec(match[0]);
    if (PROFILES_TABLE.test(match[0]) && column) record(match.index + column.index, match[0]);
  }
  for (const match of text.matchAll(CLIENT_CHAIN)) {
    for (const literal of match[0].matchAll(STRING_LITERAL)) {
      if (API_KEY_COLUMN.test(literal[0])) record(match.index + literal.index, match[0]);
    }
  }
  return [...found.values()].sort((a, b) => a.line - b.line);
}

async function* sourceFiles(dir: URL): AsyncGenerator<URL> {
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(dir));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return;
    throw error;
  }
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    if (entry.isDirectory && entry.name !== "node_modules" && !entry.name.startsWith(".")) {
      yield* sourceFiles(new URL(`${entry.name}/`, dir));
    } else if (entry.isFile && SOURCE.test(entry.name)) {
      yield new URL(entry.name, dir);
    }
  }
}

Deno.test("the detector finds every way of reading a profiles.*_api_key column", () => {
  const reads = [
    "const rows = await sql`select p.openai_api_key from public.profiles p where p.id = ${id}`;",
    'await db.query("SELECT vendor_api_key FROM profiles WHERE wallet = $1", [wallet]);',
    "const key = row.profiles.replicate_api_key;",
    "select profiles.vendor_b_api_key, id from users join profiles using (id)",
    'const { data } = await supabase.from("profiles").select("id, vendor_api_key").single();',
    "await supabase\n  .from('profiles')\n  .select('vendor_api_key')\n  .eq('id', id);",
    'const q = "update profiles set " +\n  "x" + "; select image_api_key from profiles";',
  ];
  for (const code of reads) {
    assert.ok(legacyReads(code, "x.ts").length > 0, code);
  }
  const fine = [
    'const profile = await supabase.from("profiles").select("display_name");',
    "select secret_type from public.user_secrets where user_id = $1",
    "const apiKey = options.apiKey; // provider_f_api_key comes from the vault",
    '"OPENAI_API_KEY"',
    "// Legacy profile columns are never read.",
  ];
  for (const code of fine) {
    assert.deepEqual(legacyReads(code, "x.ts"), [], code);
  }
  assert.deepEqual(
    legacyReads("a\nb\nselect x_api_key from profiles", "f.sql").map((r) => r.line),
    [
      3,
    ],
  );
});

Deno.test("no runtime code reads a legacy profiles.*_api_key column", async () => {
  const reads: LegacyRead[] = [];
  let files = 0;
  for (const directory of RUNTIME_DIRECTORIES) {
    for await (const url of sourceFiles(new URL(`${directory}/`, ROOT))) {
      files++;
      const relative = url.pathname.slice(ROOT.pathname.length);
      reads.push(...legacyReads(await Deno.readTextFile(url), relative));
    }
  }
  // The walk must have seen the code it guards, or this test would pass on nothing.
  assert.ok(files >= 20, `only ${files} source files found`);
  assert.deepEqual(
    reads.map((read) => `${read.file}:${read.line}: ${read.snippet}`),
    [],
    "Provider keys come from the vault (sdk/src/server.ts), never from " +
      "profiles columns; see docs/live-run.md (legacy per-profile columns) for moving old values over.",
  );
});
