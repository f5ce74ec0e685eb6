/**
 * The docs cannot go stale: every shell or TypeScript block in README.md and docs/ says whether it
 * runs (```sh test, ```ts test[=id]) or not (```sh no-test, for what only runs deployed or changes
 * the machine), or runs in tests/package_test.ts from the packed client package (```ts package=id,
 * also for js). Each `test` block runs against the local app served on a random port. docs/api.md
 * is one session: its shell blocks run in order in one bash shell, as written (`$BASE`, no port),
 * from its own `deno task sign-in`. Elsewhere each shell block runs for a freshly signed-in creator
 * (the documented URL swapped for the server's). Every curl command is checked against its answer
 * comment (`# 200 {…}`, or the JSON block after it); TypeScript blocks run as their own
 * `deno run` process. docs/api.md's error table must list every code with its status.
 */
import assert from "node:assert/strict";
import { atEdge, LOCAL_ANON_KEY } from "../server/app.ts";
import { DEFAULT_DEV_KEYS_PATH, loadOrCreateDevKeys } from "../server/dev-keys.ts";
import { bearer, newWallet, signIn, type TestApp } from "./support/app.ts";
import { describeWithDatabase } from "./support/suite.ts";
import { tarballNote } from "./support/walkthrough.ts";

const ROOT = new URL("../", import.meta.url);
const DOCUMENTED_BASE = "http://127.0.0.1:54321";
const CURL = "/usr/bin/curl";
/** Pages whose shell blocks are one session, run in order in one shell as a reader would. */
const SESSION_PAGES = new Set(["docs/api.md"]);

interface Block {
  file: string;
  line: number;
  lang: string;
  marker: string | null;
  id: string | null;
  code: string;
  /** The ```json block right after this one, when there is one. */
  jsonAfter: string | null;
}

async function docFiles(): Promise<string[]> {
  const files = ["README.md"];
  for await (const entry of Deno.readDir(new URL("docs/", ROOT))) {
    if (entry.isFile && entry.name.endsWith(".md")) files.push(`docs/${entry.name}`);
  }
  return files.sort();
}

function parseBlocks(file: string, text: string): Block[] {
  const lines = text.split("\n");
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = lines[i].match(/^(\s*)```(\S*)\s*(.*)$/);
    if (!open) continue;
    const [, indent, lang, info] = open;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && lines[j].trim() !== "```"; j++) {
      body.push(lines[j].slice(indent.length));
    }
    const words = info.trim().split(/\s+/).filter(Boolean);
    const marker = words.find((w) =>
      w === "no-test" || w === "test" || w.startsWith("test=") || w.startsWith("package=")
    ) ?? null;
    blocks.push({
      file,
      line: i + 1,
      lang,
      marker: marker === null
        ? null
        : marker.startsWith("package=")
        ? "package"
        : marker.startsWith("test")
        ? "test"
        : "no-test",
      id: marker?.startsWith("test=") ? marker.slice(5) : null,
      code: body.join("\n"),
      jsonAfter: null,
    });
    if (lang === "json" && blocks.length > 1) {
      const previous = blocks[blocks.length - 2];
      const between = lines.slice(previous.line, i).join("\n");
      // Only prose-free adjacency: the json block follows the previous block's closing fence.
      if (/^[\s\S]*```\s*$/.test(between.trimEnd())) {
        previous.jsonAfter = body.join("\n");
      }
    }
    i = j;
  }
  return blocks;
}

const FILES = await docFiles();
const BLOCKS = (await Promise.all(
  FILES.map(async (file) => parseBlocks(file, await Deno.readTextFile(new URL(file, ROOT)))),
)).flat();
const RUNNABLE_LANGS = new Set(["sh", "bash", "shell", "ts", "typescript"]);
const SHELL_LANGS = new Set(["sh", "bash", "shell"]);
const TESTED = BLOCKS.filter((b) => RUNNABLE_LANGS.has(b.lang) && b.marker === "test");
const inSession = (b: Block) => SESSION_PAGES.has(b.file) && SHELL_LANGS.has(b.lang);

Deno.test("every shell and TypeScript block in the README and docs/ says whether the docs test runs it", () => {
  const unmarked = BLOCKS.filter((b) => RUNNABLE_LANGS.has(b.lang) && b.marker === null)
    .map((b) => `${b.file}:${b.line}`);
  assert.deepEqual(unmarked, [], "mark each block `test` or `no-test` after its language");
  // The walk must have found the examples, or this file would pass on nothing.
  assert.ok(TESTED.length >= 12, `only ${TESTED.length} runnable blocks found`);
});

/** What a session page's reader runs first: the sign-in, which exports what the examples use. */
const SIGN_IN = /^eval "\$\(npx -y deno@[\d.]+ task -q sign-in\)"(\s+#.*)?$/;

Deno.test("docs/api.md's commands name no host or port: they use $BASE from its own sign-in", () => {
  for (const page of SESSION_PAGES) {
    const shell = TESTED.filter((b) => b.file === page && SHELL_LANGS.has(b.lang));
    assert.ok(shell.length > 0, `${page}: no shell block to run`);
    assert.match(commands(shell[0].code)[0].text, SIGN_IN, `${page}: the first command signs in`);
    const named = shell.flatMap((b) =>
      commands(b.code).filter((c) => /54321|127\.0\.0\.1|localhost/.test(c.text))
        .map((c) => `${b.file}:${b.line}: ${c.text}`)
    );
    assert.deepEqual(named, []);
  }
});

Deno.test("docs/api.md runs whole: every shell block of a session page is run, none exempt", () => {
  for (const page of SESSION_PAGES) {
    const exempt = BLOCKS.filter((b) =>
      b.file === page && SHELL_LANGS.has(b.lang) && b.marker !== "test"
    ).map((b) => `${b.file}:${b.line}`);
    assert.deepEqual(exempt, [], `${page}: every shell block runs in the session (\`sh test\`)`);
  }
});

Deno.test("every page with an install line of the package says once, at its top and the same way, to install the tarball until it is on npm", async () => {
  const pages = [
    ...new Set(
      BLOCKS.filter((b) =>
        SHELL_LANGS.has(b.lang) && b.marker === "package" && /\bnpm install\b/.test(b.code)
      ).map((b) => b.file),
    ),
  ];
  assert.ok(pages.length >= 2, `install lines found on ${pages}`);
  const notes = new Set<string>();
  for (const page of pages) {
    const text = await Deno.readTextFile(new URL(page, ROOT));
    const note = await tarballNote(page);
    assert.ok(note !== null, `${page} has no note on installing the tarball`);
    assert.equal(text.split(note).length, 2, `${page} says it more than once`);
    // At the top: before the page's first section.
    assert.ok(text.indexOf(note) < text.search(/^## /m), `${page}: the note is not at its top`);
    notes.add(note);
  }
  assert.equal(notes.size, 1, "the pages say it in different words");
});

Deno.test("docs/api.md lists every error code the service has, each with its status, and no other", async () => {
  const table = await errorStatusTable();
  const api = await Deno.readTextFile(new URL("docs/api.md", ROOT));
  const documented = new Map(
    [...api.matchAll(/^\| (\d{3})\s+\| `([a-z_]+)`\s+\|/gm)].map((m) => [m[2], Number(m[1])]),
  );
  assert.deepEqual(
    Object.fromEntries([...documented].sort()),
    Object.fromEntries(Object.entries(table).sort()),
  );
});

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, "").replaceAll(" ", "-");
}

Deno.test("every relative link in the README, docs/ and bench/README.md reaches a file, and its anchor a heading there", async () => {
  const files = [...FILES, "bench/README.md"];
  const anchors = new Map<string, Set<string>>();
  const texts = new Map<string, string>();
  for (const file of files) {
    const text = await Deno.readTextFile(new URL(file, ROOT));
    texts.set(file, text);
    const prose = text.replace(/```[\s\S]*?```/g, "");
    anchors.set(file, new Set([...prose.matchAll(/^#+ (.*)$/gm)].map((m) => anchorOf(m[1]))));
  }
  const broken: string[] = [];
  for (const [file, text] of texts) {
    for (const [, link] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(link)) continue;
      const [path, anchor] = link.split("#");
      const target = path === "" ? file : new URL(path, new URL(file, ROOT)).pathname
        .slice(ROOT.pathname.length);
      const exists = await Deno.stat(new URL(target, ROOT)).then(() => true, () => false);
      if (!exists) broken.push(`${file}: ${link} (no such file)`);
      else if (anchor && anchors.has(target) && !anchors.get(target)!.has(anchor)) {
        broken.push(`${file}: ${link} (no such heading)`);
      }
    }
  }
  assert.deepEqual(broken, []);
});

/** The code → status table, wherever in protocol/ or functions/ it lives. */
async function errorStatusTable(): Promise<Record<string, number>> {
  const found: URL[] = [];
  const walk = async (dir: URL) => {
    for await (const entry of Deno.readDir(dir)) {
      const url = new URL(entry.name + (entry.isDirectory ? "/" : ""), dir);
      if (entry.isDirectory) await walk(url);
      else if (entry.name.endsWith(".ts")) {
        if ((await Deno.readTextFile(url)).includes("export const ERROR_STATUS")) found.push(url);
      }
    }
  };
  await walk(new URL("protocol/", ROOT));
  await walk(new URL("functions/", ROOT));
  assert.equal(found.length, 1, "exactly one module defines ERROR_STATUS");
  return (await import(found[0].href)).ERROR_STATUS;
}

// ---- running the examples ----

// The sign-in task exports the reveal token of the development keys in the repository, where
// `deno task start` keeps them: the test's server takes that token (made here if none exists yet).
const REVEAL_TOKEN = (await devKeys()).SERVER_REVEAL_TOKEN;
const PROVIDER_B_VALUE = `sk-docs-provider-b-${crypto.randomUUID()}`;

/** The repository's development keys; another test process may be creating them at this moment. */
async function devKeys() {
  const path = new URL(DEFAULT_DEV_KEYS_PATH, ROOT).pathname;
  try {
    return (await loadOrCreateDevKeys(path)).keys;
  } catch (error) {
    if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
    return (await loadOrCreateDevKeys(path)).keys;
  }
}

interface Creator {
  env: Record<string, string>;
}

/** A fresh creator with two sessions, two stored secrets, and a signed proof ready to send. */
async function newCreator(app: TestApp, base: string): Promise<Creator> {
  const account = newWallet();
  const first = await signIn(app, account);
  const other = await signIn(app, account);
  for (
    const [secretType, value] of [["provider_a_org_id", "org-docs"], [
      "provider_b_key",
      PROVIDER_B_VALUE,
    ]]
  ) {
    const response = await app.fetch("/api/secrets", {
      method: "PUT",
      headers: bearer(first.accessToken, { "content-type": "application/json" }),
      body: JSON.stringify({ secretType, value }),
    });
    assert.equal(response.status, 200, await response.text());
  }
  const nonce = await app.fetch("/api/auth/nonce", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ address: account.address }),
  });
  const { message } = await nonce.json();
  const proof = JSON.stringify({ message, signature: await account.signMessage({ message }) });
  return {
    env: {
      BASE: base,
      TOKEN: first.accessToken,
      ACCESS_TOKEN: first.accessToken,
      REFRESH_TOKEN: first.refreshToken,
      OTHER_DEVICE_TOKEN: other.accessToken,
      SERVER_REVEAL_TOKEN: REVEAL_TOKEN,
      PROOF: proof,
      ANON_KEY: LOCAL_ANON_KEY,
      PROVIDER_B_VALUE,
    },
  };
}

interface Command {
  text: string;
  answer: string | null;
}

/** A shell block as commands (backslash continuations joined), each with its answer comment. */
function commands(code: string): Command[] {
  const out: Command[] = [];
  let pending = "";
  for (const line of code.split("\n")) {
    if (pending === "" && line.trimStart().startsWith("#")) {
      const last = out[out.length - 1];
      assert.ok(last, `an answer comment before any command: ${line}`);
      last.answer = `${last.answer ?? ""}${line.replace(/^\s*#\s?/, "")}\n`;
      continue;
    }
    if (line.trim() === "" && pending === "") continue;
    pending += line.endsWith("\\") ? `${line.slice(0, -1)} ` : line;
    if (!line.endsWith("\\")) {
      out.push({ text: pending, answer: null });
      pending = "";
    }
  }
  return out;
}

interface Expected {
  status: number;
  text: string;
  exact: boolean;
}

function expectation(command: Command, jsonAfter: string | null, last: boolean): Expected | null {
  if (command.answer !== null) {
    const answer = command.answer.trim();
    const http = answer.match(/^HTTP\/[\d.]+ (\d{3})/);
    if (http) return { status: Number(http[1]), text: "", exact: false };
    const coded = answer.match(/^(\d{3})\s+([\s\S]*)$/);
    if (coded) return { status: Number(coded[1]), text: coded[2], exact: false };
    return { status: 200, text: answer, exact: false };
  }
  if (last && jsonAfter !== null) return { status: 200, text: jsonAfter, exact: true };
  return null;
}

function keysOf(value: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) value.forEach((v) => keysOf(v, into));
  else if (value !== null && typeof value === "object") {
    for (const [key, inner] of Object.entries(value)) {
      into.add(key);
      keysOf(inner, into);
    }
  }
  return into;
}

/** What stands for "more items" in a shown array (`["a", …]`), once parsed. */
const MORE = "\u0000more";

/**
 * The JSON value a shown answer starts with (prose may follow it, as in `{…}   (404 when …)`),
 * parsed, with `…` between array items read as "and more"; null when it is not JSON.
 */
function shownValue(text: string): unknown {
  const start = text.search(/[{[]/);
  if (start === -1) return null;
  let depth = 0;
  let inString = false;
  let out = "";
  for (let i = start; i < text.length; i++) {
    const char = text[i];
    if (inString) {
      out += char;
      if (char === "\\") out += text[++i];
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') inString = true;
    else if (char === "{" || char === "[") depth++;
    else if (char === "}" || char === "]") depth--;
    out += char === "…" ? JSON.stringify(MORE) : char;
    if (depth === 0) break;
  }
  try {
    return JSON.parse(out);
  } catch {
    return null;
  }
}

/** A shown value that is the same on every run: a boolean, a count, a name such as `revealed`. */
const fixed = (value: unknown) =>
  typeof value === "boolean" ||
  typeof value === "number" && Number.isInteger(value) && Math.abs(value) < 1e9 ||
  typeof value === "string" && /^[a-z][a-z0-9_]*$/.test(value);

/**
 * Where `actual` differs from the shown answer: every object has exactly the shown fields, every
 * array the shown number of items (at least, where it ends in `…`), every value the shown JSON
 * type, and every fixed value (see `fixed`) the shown one. Ids, times and texts differ from run to
 * run, so only their type is held.
 */
function shapeProblems(shown: unknown, actual: unknown, at = "body"): string[] {
  const kind = (value: unknown) =>
    value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
  if (kind(shown) !== kind(actual)) return [`${at} is ${kind(actual)}, shown as ${kind(shown)}`];
  if (fixed(shown) && shown !== actual) {
    return [`${at} is ${JSON.stringify(actual)}, shown ${JSON.stringify(shown)}`];
  }
  if (Array.isArray(shown) && Array.isArray(actual)) {
    const more = shown.at(-1) === MORE;
    const items = more ? shown.slice(0, -1) : shown;
    if (more ? actual.length < items.length : actual.length !== items.length) {
      return [`${at} has ${actual.length} items, shown ${items.length}${more ? " or more" : ""}`];
    }
    return items.flatMap((item, index) => shapeProblems(item, actual[index], `${at}[${index}]`));
  }
  if (kind(shown) === "object") {
    const shownObject = shown as Record<string, unknown>;
    const actualObject = actual as Record<string, unknown>;
    const missing = Object.keys(actualObject).filter((key) => !(key in shownObject));
    const extra = Object.keys(shownObject).filter((key) => !(key in actualObject));
    return [
      ...missing.map((key) => `${at}.${key} is not shown`),
      ...extra.map((key) => `${at}.${key} is shown but not answered`),
      ...Object.keys(shownObject).filter((key) => key in actualObject).flatMap((key) =>
        shapeProblems(shownObject[key], actualObject[key], `${at}.${key}`)
      ),
    ];
  }
  return [];
}

function checkAnswer(
  where: string,
  expected: Expected,
  status: number,
  body: string,
  wholeAnswers = false,
): void {
  assert.equal(status, expected.status, `${where}: status ${status}, body ${body}`);
  if (expected.text.trim() === "") return;
  const actual = JSON.parse(body);
  if (wholeAnswers) {
    // A session page shows each answer whole: JSON, with every field that comes back.
    const shown = shownValue(expected.text);
    assert.notEqual(shown, null, `${where}: the shown answer is not JSON: ${expected.text}`);
    assert.deepEqual(shapeProblems(shown, actual), [], `${where}: ${body}`);
  }
  const actualKeys = keysOf(actual);
  const named = [...expected.text.matchAll(/"([A-Za-z_][A-Za-z0-9_]*)"\s*:/g)].map((m) => m[1]);
  assert.ok(named.length > 0, `${where}: the answer comment names no field`);
  assert.deepEqual(named.filter((key) => !actualKeys.has(key)), [], `${where}: ${body}`);
  const code = expected.text.match(/"code"\s*:\s*"([a-z_]+)"/);
  if (code) assert.equal(actual.error?.code, code[1], `${where}: ${body}`);
  if (expected.exact) {
    assert.deepEqual(
      Object.keys(actual).sort(),
      Object.keys(JSON.parse(expected.text)).sort(),
      `${where}: ${body}`,
    );
  }
}

/** The wrapper every docs command's curl goes through: quiet, and its headers kept for the check. */
const CURL_FUNCTION = `curl() { ${CURL} -sS -D "$HEADERS_FILE" "$@"; }`;

/**
 * Checks one command's output: the answer to its last request (status from the headers curl
 * wrote, the body from what it printed) against what the docs say it answers.
 */
async function checkCommand(
  where: string,
  expected: Expected | null,
  headersFile: string,
  stdout: string,
  wholeAnswers = false,
): Promise<void> {
  const statuses = [...(await Deno.readTextFile(headersFile)).matchAll(/^HTTP\/[\d.]+ (\d{3})/gm)];
  const status = Number(statuses[statuses.length - 1][1]);
  const body = stdout.startsWith("HTTP/") ? stdout.slice(stdout.indexOf("\r\n\r\n") + 4) : stdout;
  if (expected === null) {
    assert.ok(status >= 200 && status < 300, `${where}: status ${status}, body ${body}`);
  } else checkAnswer(where, expected, status, body, wholeAnswers);
}

async function runShell(block: Block, base: string, env: Record<string, string>): Promise<void> {
  const list = commands(block.code);
  assert.ok(list.length > 0, `${block.file}:${block.line}: no command`);
  const dir = await Deno.makeTempDir({ prefix: "docs-example-" });
  try {
    for (const [index, command] of list.entries()) {
      const where = `${block.file}:${block.line} command ${index + 1}`;
      const script = [
        "set -euo pipefail",
        CURL_FUNCTION,
        command.text.replaceAll(DOCUMENTED_BASE, base),
      ].join("\n");
      const headersFile = `${dir}/headers-${index}`;
      const result = await new Deno.Command("bash", {
        args: ["-c", script],
        env: { ...env, HEADERS_FILE: headersFile },
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(result.code, 0, `${where}: ${new TextDecoder().decode(result.stderr)}`);
      const expected = expectation(command, block.jsonAfter, index === list.length - 1);
      await checkCommand(where, expected, headersFile, new TextDecoder().decode(result.stdout));
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** What a session page's sign-in exports: unset first, so only the page's own commands set them. */
const SESSION_VARIABLES = [
  "BASE",
  "TOKEN",
  "ACCESS_TOKEN",
  "REFRESH_TOKEN",
  "OTHER_DEVICE_TOKEN",
  "PROOF",
  "SERVER_REVEAL_TOKEN",
  "SIGN_IN_WALLET",
  "OTHER_DEVICE_SESSION_ID",
];

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);

/** Single-quoted for bash: nothing inside is expanded. */
const quoted = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`;

/**
 * A session page's shell blocks, in order, as one bash script in the repository (where the
 * reader runs `deno task`), with only PORT set, as after `PORT=… deno task start`: the page's own
 * sign-in sets BASE and the tokens. Each command's output is kept apart for its check, and the
 * first that fails stops the shell. `npx -y deno@…` runs this Deno (the pinned one), offline.
 */
async function runSession(app: TestApp, blocks: Block[]): Promise<void> {
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    atEdge(app.app.handler, app.config.clientIp),
  );
  const steps = blocks.flatMap((block) => {
    const list = commands(block.code);
    assert.ok(list.length > 0, `${block.file}:${block.line}: no command`);
    return list.map((command, index) => ({
      where: `${block.file}:${block.line} command ${index + 1}`,
      command,
      expected: expectation(command, block.jsonAfter, index === list.length - 1),
    }));
  });
  const dir = await Deno.makeTempDir({ prefix: "docs-session-" });
  const output = (index: number, kind: "headers" | "out" | "err" | "failed") =>
    `${dir}/${kind}-${index}`;
  const script = [
    "set -uo pipefail",
    `unset ${SESSION_VARIABLES.join(" ")}; unset -f vault_sign`,
    CURL_FUNCTION,
    `npx() {
  if [ "$#" -ge 2 ] && [ "$1" = -y ] && [[ "$2" == deno@* ]]; then shift 2; ${
      quoted(Deno.execPath())
    } "$@"
  else echo "npx $*: only npx -y deno@… runs in the docs test" >&2; return 127; fi
}`,
    ...steps.flatMap((step, index) => [
      `HEADERS_FILE=${quoted(output(index, "headers"))}`,
      "{",
      step.command.text,
      `} >${quoted(output(index, "out"))} 2>${quoted(output(index, "err"))} || ` +
      `{ echo "$?" >${quoted(output(index, "failed"))}; exit 1; }`,
    ]),
  ].join("\n");
  try {
    const result = await new Deno.Command("bash", {
      args: ["-c", script],
      cwd: ROOT.pathname,
      env: { PORT: String(server.addr.port) },
      stdout: "piped",
      stderr: "piped",
    }).output();
    // What the commands without a request (the sign-ins) said, for a later failure's message.
    let context = "";
    const ran = (index: number) => exists(output(index, "out"));
    for (const [index, step] of steps.entries()) {
      const read = (kind: "headers" | "out" | "err" | "failed") =>
        Deno.readTextFile(output(index, kind)).catch(() => null);
      const [stdout, stderr, failed, headers] = await Promise.all([
        read("out"),
        read("err"),
        read("failed"),
        read("headers"),
      ]);
      const shellStderr = new TextDecoder().decode(result.stderr);
      assert.ok(stdout !== null, `${step.where}: never ran\n${shellStderr}`);
      assert.equal(failed, null, `${step.where}: exit ${failed?.trim()}: ${stderr}${context}`);
      // The shell itself stopped inside this command (an unset variable under `set -u`).
      const stopped = index + 1 < steps.length ? !(await ran(index + 1)) : result.code !== 0;
      assert.ok(
        !stopped,
        `${step.where}: the shell stopped here: ${stderr}${shellStderr}${context}`,
      );
      if (headers === null) {
        // No request: a command such as the sign-in, which only has to succeed.
        assert.equal(
          step.expected,
          null,
          `${step.where}: an answer is documented, but no request was made`,
        );
        context += `\n(${step.where} said: ${stderr?.trim()})`;
        continue;
      }
      await checkCommand(step.where, step.expected, output(index, "headers"), stdout, true);
    }
    assert.equal(result.code, 0, new TextDecoder().decode(result.stderr));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** What each named TypeScript block needs around it to run and report its result. */
const DRIVERS: Record<string, { before?: string; after: string }> = {
  "supabase-js": {
    before: `import { createClient } from "@supabase/supabase-js";
const SUPABASE_URL = Deno.env.get("BASE")!;
const SUPABASE_ANON_KEY = Deno.env.get("ANON_KEY")!;
const session = { accessToken: Deno.env.get("TOKEN")! };
const secretType = "provider_c_key";
const value = "sk-docs-provider-c-0123";
`,
    after:
      `console.log(JSON.stringify(data.secrets.map((s: { secretType: string }) => s.secretType)));`,
  },
  "legacy-move": {
    after: `
await moveLegacyKeys(Deno.env.get("PROFILE_ID")!, Deno.env.get("TOKEN")!);
await sql.end();
console.log("moved");`,
  },
};

async function runTypeScript(
  block: Block,
  base: string,
  env: Record<string, string>,
): Promise<string> {
  const driver = block.id === null ? { after: "" } : DRIVERS[block.id];
  assert.ok(driver, `${block.file}:${block.line}: no driver for test=${block.id}`);
  const dir = new URL(".local/docs-examples/", ROOT);
  await Deno.mkdir(dir, { recursive: true });
  const file = new URL(`example-${crypto.randomUUID()}.ts`, dir);
  const code = block.code.replaceAll(DOCUMENTED_BASE, base).replaceAll('from "./', 'from "../../');
  await Deno.writeTextFile(file, `${driver.before ?? ""}${code}\n${driver.after}\n`);
  try {
    const result = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--quiet", "-A", file.pathname],
      cwd: ROOT.pathname,
      env,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(result.stdout);
    const stderr = new TextDecoder().decode(result.stderr);
    assert.equal(result.code, 0, `${block.file}:${block.line}: ${stdout}\n${stderr}`);
    return stdout;
  } finally {
    await Deno.remove(file);
  }
}

async function runBlock(app: TestApp, block: Block): Promise<void> {
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    atEdge(app.app.handler, app.config.clientIp),
  );
  const base = `http://127.0.0.1:${server.addr.port}`;
  const { env } = await newCreator(app, base);
  if (block.lang === "sh" || block.lang === "bash" || block.lang === "shell") {
    return await runShell(block, base, env);
  }
  if (block.id === "legacy-move") {
    if (app.database.url === null) {
      console.log(
        `${block.file}:${block.line}: runs on Postgres only (postgres.js); skipped on PGlite`,
      );
      return;
    }
    const db = app.database.db;
    await db.query(
      "create table if not exists public.profiles (id uuid primary key, vendor_a_api_key text, vendor_b_api_key text)",
    );
    const profileId = crypto.randomUUID();
    const legacyA = `sk-legacy-a-${crypto.randomUUID()}`;
    await db.query("insert into public.profiles values ($1, $2, null)", [profileId, legacyA]);
    const out = await runTypeScript(block, base, {
      ...env,
      DATABASE_URL: app.database.url,
      PROFILE_ID: profileId,
    });
    assert.match(out, /moved/);
    const reveal = await app.fetch("/api/secrets/reveal", {
      method: "POST",
      headers: bearer(env.TOKEN, {
        "x-service-server-secret": REVEAL_TOKEN,
        "content-type": "application/json",
      }),
      body: JSON.stringify({ secretTypes: ["provider_a_api_key"] }),
    });
    const { secrets } = await reveal.json();
    assert.deepEqual(secrets.map((s: { value: string }) => s.value), [legacyA]);
    const [row] = await db.query<{ a: string | null }>(
      "select vendor_a_api_key as a from public.profiles where id = $1",
      [profileId],
    );
    assert.equal(row.a, null);
    return;
  }
  const out = await runTypeScript(block, base, env);
  if (block.id === "supabase-js") {
    assert.ok(JSON.parse(out.trim()).includes("provider_c_key"), out);
  } else {
    // The full sign-in: signed in, listed the vault, refreshed and signed out without an error.
    assert.match(out, /signed in as [0-9a-f-]{36} 0x[0-9a-fA-F]{40}/);
    assert.match(out, /vault: \[\]/);
  }
}

describeWithDatabase(
  "the docs' examples run against the local server and answer as documented",
  Object.fromEntries(
    TESTED.flatMap((block) => {
      if (!inSession(block)) {
        return [[
          `${block.file}:${block.line} (${block.lang}${block.id ? ` ${block.id}` : ""})`,
          (app: TestApp) => runBlock(app, block),
        ]];
      }
      const session = TESTED.filter((b) => b.file === block.file && inSession(b));
      if (session[0] !== block) return [];
      return [[
        `${block.file}: the shell blocks in order in one shell (lines ${
          session.map((b) => b.line).join(", ")
        })`,
        (app: TestApp) => runSession(app, session),
      ]];
    }),
  ),
  { SERVER_REVEAL_TOKEN: REVEAL_TOKEN },
);
