/**
 * Where a value is given to a credential's name other than by `NAME=value`: as a call's default or
 * through a call that sets it, as a fallback after `||`, `??` or `or`, under a dotted `.properties`
 * key or an INI section, after `Authorization: Token`, under Azure's `Ocp-Apim-Subscription-Key`.
 * Each form with fresh values, and look-alikes that are not credentials. Values are made at run
 * time (tests/support/key-scan.ts).
 */
import assert from "node:assert/strict";
import { maskSecret } from "../key-scanner/finding.ts";
import { BASE62, BASE64URL, HEX, LETTERS, randomFrom, scanText } from "./support/key-scan.ts";

const ROUNDS = 50;
const NAMES = ["MISTRAL_API_KEY", "OPENAI_API_KEY", "COHERE_KEY", "HF_TOKEN", "provider_b_key"];

/** A fresh value: base62, base64url or (a quarter of the time) letters only, 32 to 64 long. */
function freshValue(i: number): string {
  const alphabet = i % 4 === 0 ? LETTERS : i % 2 === 0 ? BASE64URL : BASE62;
  return randomFrom(alphabet, 32 + (i % 33));
}

/** Exactly one finding, at the value's column, of `kind`. */
function assertFoundOnce(line: string, file: string, value: string, kind: string) {
  const text = `first line\n${line}\n`;
  assert.deepEqual(
    scanText(text, file).map((f) => [f.line, f.column, f.kind, f.masked]),
    [[2, line.indexOf(value) + 1, kind, maskSecret(value)]],
    `${file}: ${line.replace(value, "<value>")}`,
  );
}

function assertClean(lines: readonly string[], files: readonly string[]) {
  for (const line of lines) {
    for (const file of files) assert.deepEqual(scanText(line, file), [], `${file}: ${line}`);
  }
}

Deno.test("values given as a default or set through a call are found: getenv, environ.get, setdefault, putenv, Setenv, Deno.env.set, set_var", () => {
  const calls: ReadonlyArray<[string, (name: string, value: string) => string]> = [
    ["app.py", (n, v) => `key = os.getenv("${n}", "${v}")`],
    ["app.py", (n, v) => `key = os.getenv('${n}', default='${v}')`],
    ["app.py", (n, v) => `key = os.environ.get("${n}", "${v}")`],
    ["app.py", (n, v) => `os.environ.setdefault("${n}", "${v}")`],
    ["app.py", (n, v) => `os.putenv('${n}', '${v}')`],
    ["main.go", (n, v) => `\tos.Setenv("${n}", "${v}")`],
    ["main.ts", (n, v) => `Deno.env.set("${n}", "${v}");`],
    ["main.rs", (n, v) => `    std::env::set_var("${n}", "${v}");`],
    ["Program.cs", (n, v) => `Environment.SetEnvironmentVariable("${n}", "${v}");`],
    ["notes.md", (n, v) => `Run \`os.environ.setdefault("${n}", "${v}")\` first.`],
  ];
  for (let i = 0; i < ROUNDS; i++) {
    const name = NAMES[i % NAMES.length];
    for (const [file, write] of calls) {
      const value = freshValue(i);
      assertFoundOnce(write(name, value), file, value, `value given to ${name}`);
    }
  }
  const value = randomFrom(BASE62, 40);
  assertClean([
    `key = os.getenv("MISTRAL_API_KEY")`,
    `key = os.getenv("MISTRAL_API_KEY", "")`,
    `key = os.getenv("MISTRAL_API_KEY", default_key)`,
    `key = os.environ.get("MISTRAL_API_KEY", "your-mistral-key-here")`,
    `Deno.env.set("MISTRAL_API_KEY", key);`,
    `os.Setenv("MISTRAL_API_KEY", fmt.Sprintf("%s", key))`,
    `level = os.getenv("LOG_LEVEL", "${value}")`,
    `assert.equal(lookup("MISTRAL_API_KEY", "short"), undefined);`,
  ], ["app.py", "main.ts"]);
});

Deno.test("values given as a fallback after ||, ?? or Python's or are found; expressions and other names are not", () => {
  const fallbacks: ReadonlyArray<[string, (name: string, value: string) => string]> = [
    ["app.ts", (n, v) => `const key = process.env.${n} || "${v}";`],
    ["app.ts", (n, v) => `const key = process.env.${n} ?? '${v}';`],
    ["app.js", (n, v) => `const key = process.env["${n}"] || \`${v}\`;`],
    ["app.ts", (n, v) => `const key = Deno.env.get("${n}") ?? "${v}";`],
    ["app.py", (n, v) => `key = os.getenv("${n}") or "${v}"`],
    ["app.py", (n, v) => `key = os.environ.get('${n}') or '${v}'`],
  ];
  for (let i = 0; i < ROUNDS; i++) {
    const name = NAMES[i % NAMES.length];
    for (const [file, write] of fallbacks) {
      const value = freshValue(i);
      assertFoundOnce(write(name, value), file, value, `fallback value for ${name}`);
    }
  }
  const value = randomFrom(BASE62, 40);
  assertClean([
    `const key = process.env.MISTRAL_API_KEY || "";`,
    `const key = process.env.MISTRAL_API_KEY ?? defaultKey;`,
    `const key = process.env.MISTRAL_API_KEY || "changeme";`,
    `const level = process.env.LOG_LEVEL || "${value}";`,
    `key = os.getenv("MISTRAL_API_KEY") or fail("set MISTRAL_API_KEY")`,
    "Set MISTRAL_API_KEY or OPENAI_API_KEY, or both.",
  ], ["app.ts", "app.py", "notes.md"]);
});

Deno.test(".properties keys with dots and keys under an INI section named for a provider are found; other keys and sections are not", () => {
  for (let i = 0; i < ROUNDS; i++) {
    const value = freshValue(i);
    assertFoundOnce(
      `mistral.api.key=${value}`,
      "application.properties",
      value,
      "value assigned to mistral.api.key",
    );
    assertFoundOnce(
      `openai.token : ${value}`,
      "application.properties",
      value,
      "value assigned to openai.token",
    );
    assertFoundOnce(
      `azure.openai.key = ${value}`,
      "application.properties",
      value,
      "value assigned to azure.openai.key",
    );
    for (const [section, key] of [["mistral", "key"], ["providers.cohere", "token"]]) {
      const ini = `[general]\nname = demo\n\n[${section}]\nmodel = large\n${key} = ${value}\n`;
      const found = scanText(ini, "settings.ini");
      assert.deepEqual(
        found.map((f) => [f.line, f.column, f.kind, f.masked]),
        [[6, key.length + 4, `value assigned to [${section}] ${key}`, maskSecret(value)]],
      );
    }
    // TOML's quoted value under a provider's table, in a code-like file name too.
    const toml = `[tool.app]\nname = "demo"\n[replicate]\ntoken = "${value}"\n`;
    assert.equal(scanText(toml, "pyproject.toml").length, 1);
  }
  const value = randomFrom(BASE62, 40);
  assertClean([
    "mistral.api.url=https://api.mistral.test/v1",
    `mistral.api.model=mistral-large-2411`,
    `cache.key=${value}`,
    `[logging]\nkey = ${value}\n`,
    `[mistral]\nmodel = mistral-large-2411\nkey =\n`,
    `[mistral]\n[general]\nkey = ${value}\n`,
    `[mistral]\nendpoint = https://api.mistral.test/v1?cache=${value}\n`,
  ], ["settings.ini", "application.properties"]);
});

Deno.test("Authorization: Token with 20 or more random characters is found, as Django REST framework's 40 hex digits; words and references are not", () => {
  const kind = "token (Authorization: Token …)";
  for (let i = 0; i < ROUNDS * 4; i++) {
    const value = i % 2 === 0 ? randomFrom(HEX, 40) : freshValue(i);
    assertFoundOnce(`Authorization: Token ${value}`, "request.http", value, kind);
    assertFoundOnce(
      `curl -H "Authorization: Token ${value}" https://api.example.test/v1/items/`,
      "run.sh",
      value,
      kind,
    );
    assertFoundOnce(`headers = {"Authorization": "Token ${value}"}`, "client.py", value, kind);
    assertFoundOnce(`headers["authorization"] = 'token ${value}'`, "client.py", value, kind);
  }
  assertClean([
    "Authorization: Token <token>",
    "Authorization: Token ${API_TOKEN}",
    "Authorization: Token your-token-goes-here",
    'headers = {"Authorization": f"Token {token}"}',
    "The Authorization header carries a token: Token followed by the key.",
    `Tokenize ${randomFrom(HEX, 40)} later.`,
  ], ["request.http", "client.py", "notes.md"]);
});

Deno.test("Azure's Ocp-Apim-Subscription-Key is found in a header, a dict, a query string and a call adding the header", () => {
  for (let i = 0; i < ROUNDS * 4; i++) {
    const value = randomFrom(HEX, 32);
    const name = "Ocp-Apim-Subscription-Key";
    const assigned = `value assigned to ${name}`;
    assertFoundOnce(`${name}: ${value}`, "request.http", value, assigned);
    assertFoundOnce(`curl -H "${name}: ${value}" https://x.test/`, "run.sh", value, assigned);
    assertFoundOnce(`headers = {"${name}": "${value}"}`, "client.py", value, assigned);
    assertFoundOnce(
      `https://api.example.test/v1/translate?subscription-key=${value}`,
      "links.txt",
      value,
      "value assigned to subscription-key",
    );
    assertFoundOnce(
      `client.DefaultRequestHeaders.Add("${name}", "${value}");`,
      "Client.cs",
      value,
      `value given to ${name}`,
    );
  }
  assertClean([
    "Ocp-Apim-Subscription-Key: <your-subscription-key>",
    "Ocp-Apim-Subscription-Key: {{subscriptionKey}}",
    'headers = {"Ocp-Apim-Subscription-Key": subscription_key}',
    "Ocp-Apim-Trace: true",
  ], ["request.http", "client.py"]);
});
