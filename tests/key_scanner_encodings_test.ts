/**
 * The key scanner reads what encodes a key: base64, hex, percent-encoding and `\u`/`\x` escapes;
 * UTF-16 without a byte-order mark even when its start has no ASCII; Latin-1 with a stray NUL. And
 * what it skips as binary it names, so a reader can tell skipped from clean. Keys are made at run
 * time (tests/support/key-scan.ts).
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { maskSecret } from "../key-scanner/finding.ts";
import { scanPaths } from "../key-scanner/scan.ts";
import {
  fixture,
  gitRepo,
  LETTERS,
  randomFrom,
  runScanIn,
  scanText,
  TOKEN_FAMILIES,
} from "./support/key-scan.ts";

const family = (name: string) => TOKEN_FAMILIES.find((f) => f.name === name)!;
const FAMILIES = [
  family("OpenAI project key"),
  family("Hugging Face user token"),
  family("Anthropic key"),
  family("Google API key"),
];

const bytes = (text: string) => new TextEncoder().encode(text);
const base64 = (text: string) => Buffer.from(bytes(text)).toString("base64");
const base64url = (text: string) => Buffer.from(bytes(text)).toString("base64url");
const hex = (text: string) => Buffer.from(bytes(text)).toString("hex");
const percentAll = (text: string) =>
  Array.from(bytes(text), (b) => `%${b.toString(16).toUpperCase().padStart(2, "0")}`).join("");
const unicodeEscapes = (text: string) =>
  Array.from(text, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("");
const hexEscapes = (text: string) =>
  Array.from(text, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`).join("");

function findings(text: string, file: string) {
  return scanText(text, file).map((f) => [f.line, f.column, f.kind, f.masked]);
}

Deno.test("keys written as base64 or hex are decoded and found at the encoded text's column; binary and keyless text are not findings", () => {
  for (const { make, kind, variable } of FAMILIES) {
    for (let i = 0; i < 25; i++) {
      const key = make();
      // Line and column of the encoded key, and the decoded key's kind and mask.
      const at = (line: number, column: number, encoding: string) => [
        [line, column, `${kind}, ${encoding}-encoded`, maskSecret(key)],
      ];
      // A Kubernetes secret holds the key itself, base64-encoded.
      const secret = `data:\n  ${variable}: ${base64(key)}\n`;
      assert.deepEqual(findings(secret, "secret.yaml"), at(2, variable.length + 5, "base64"));
      // A whole environment file, base64url without padding, at the key's place in the encoding.
      const env = base64url(`# a comment first\n${variable}=${key}\nOTHER=1\n`);
      const offset = 4 * Math.floor(bytes(`# a comment first\n${variable}=`).length / 3);
      assert.deepEqual(findings(`blob = "${env}"`, "notes.md"), at(1, 9 + offset, "base64"));
      // Hex of the key's bytes, after 0x, or of an assignment in a JSON string.
      assert.deepEqual(findings(`payload 0x${hex(key)}`, "dump.txt"), at(1, 11, "hex"));
      const json = `"${hex(`token=${key}`)}"`;
      assert.deepEqual(findings(json, "dump.json"), at(1, 2 + "token=".length * 2, "hex"));
    }
  }
  // What decodes to binary, or to text without a key, is not a finding.
  const random = crypto.getRandomValues(new Uint8Array(300));
  const clean = [
    `wasm = "${Buffer.from(random).toString("base64")}"`,
    `bytecode = "0x${Buffer.from(random).toString("hex")}"`,
    `note = "${base64("Nothing to see here: a long sentence, base64-encoded for transport.")}"`,
    `note = "${hex("Nothing to see here: a long sentence, hex-encoded for transport.")}"`,
    `integrity = "sha512-${Buffer.from(random.subarray(0, 64)).toString("base64")}"`,
    "path = functions/_shared/vault/secret-types/and/more/of/it/still/going",
  ];
  for (const line of clean) assert.deepEqual(scanText(line, "a.ts"), [], line.slice(0, 40));
});

Deno.test("keys written wholly as percent-encodings or \\u and \\x escapes are read as characters and found", () => {
  for (const { make, kind } of FAMILIES) {
    for (let i = 0; i < 25; i++) {
      const key = make();
      const masked = maskSecret(key);
      // Each line, and what precedes the key's first (encoded) character.
      const cases: Array<[string, string]> = [
        [
          `https://api.example.test/v1?key=${percentAll(key)}&x=1`,
          "https://api.example.test/v1?key=",
        ],
        [`{"text": "${unicodeEscapes(key)}"}`, `{"text": "`],
        [`s = "${hexEscapes(key)}"`, `s = "`],
        // Only the dashes encoded: the key reads whole once they are characters again.
        [
          `https://api.example.test/v1?key=${key.replaceAll("-", "%2D")}`,
          "https://api.example.test/v1?key=",
        ],
        [`{"text": "${key.replaceAll("-", "\\u002d")}"}`, `{"text": "`],
      ];
      for (const [line, before] of cases) {
        assert.deepEqual(
          findings(line, "capture.har"),
          [[1, before.length + 1, kind, masked]],
          line,
        );
      }
    }
  }
});

/** UTF-16 code units of `text`, without a byte-order mark. */
function utf16(text: string, littleEndian: boolean): Uint8Array {
  const out = new Uint8Array(text.length * 2);
  const view = new DataView(out.buffer);
  for (let i = 0; i < text.length; i++) view.setUint16(i * 2, text.charCodeAt(i), littleEndian);
  return out;
}

/** `count` characters drawn from the code points [from, to]. */
function randomText(count: number, from: number, to: number): string {
  const values = crypto.getRandomValues(new Uint32Array(count));
  return String.fromCharCode(...Array.from(values, (v) => from + (v % (to - from + 1))));
}

Deno.test("UTF-16 without a byte-order mark whose first 8 KB are CJK or kana text is decoded and scanned", async () => {
  const key = family("OpenAI project key").make();
  const tail = `\r\nOPENAI_API_KEY=${key}\r\n`;
  const chinese = randomText(6000, 0x4e00, 0x9fff);
  // Japanese: mostly hiragana, with some kanji and the ideographic full stop.
  const japanese = Array.from(
    { length: 600 },
    () => `${randomText(8, 0x3041, 0x3093)}${randomText(2, 0x4e00, 0x9fff)}\u3002`,
  ).join("");
  const korean = randomText(5000, 0xac00, 0xd7a3);
  await using dir = await fixture({
    "zh-le.env": utf16(chinese + tail, true),
    "zh-be.env": utf16(chinese + tail, false),
    "ja-le.env": utf16(japanese + tail, true),
    "ko-be.env": utf16(korean + tail, false),
  });
  const report = await scanPaths([dir.dir]);
  assert.deepEqual(report.skipped, []);
  assert.deepEqual(
    report.findings.map((f) => [f.file.slice(dir.dir.length + 1), f.line, f.column, f.kind]),
    ["ja-le.env", "ko-be.env", "zh-be.env", "zh-le.env"].map((file) => [
      file,
      2,
      16,
      family("OpenAI project key").kind,
    ]),
  );
});

Deno.test("a Latin-1 file with a NUL is text; binaries with text-like bytes are still skipped", async () => {
  const key = family("Anthropic key").make();
  const latin1 = (text: string) => Uint8Array.from(text, (c) => c.charCodeAt(0));
  const prose = "Clé de l'API, à garder hors du dépôt. Ærø, façade, naïve, über.\n".repeat(40);
  await using dir = await fixture({
    "notes-fr.env": latin1(`${prose}\0\nANTHROPIC_API_KEY=${key}\n`),
    "no-nul-fr.env": latin1(`${prose}ANTHROPIC_API_KEY=${key}\n`),
    // Magic numbers: a PNG and a WebAssembly module whose bytes after the header are ASCII.
    "image.png": new Uint8Array([
      0x89,
      0x50,
      0x4e,
      0x47,
      0x0d,
      0x0a,
      0x1a,
      0x0a,
      0,
      0,
      ...bytes(`key ${key}`),
    ]),
    "module.wasm": new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, ...bytes(`key ${key}`)]),
    "random.bin": crypto.getRandomValues(new Uint8Array(8192)),
    "shorts.bin": new Uint8Array(crypto.getRandomValues(new Uint16Array(4096)).buffer),
  });
  const report = await scanPaths([dir.dir]);
  assert.deepEqual(
    report.findings.map((f) => [f.file.slice(dir.dir.length + 1), f.line, f.column]),
    [["no-nul-fr.env", 41, 19], ["notes-fr.env", 42, 19]],
  );
  assert.deepEqual(report.skipped.map((s) => [s.file.slice(dir.dir.length + 1), s.reason]), [
    ["image.png", "binary"],
    ["module.wasm", "binary"],
    ["random.bin", "binary"],
    ["shorts.bin", "binary"],
  ]);
});

Deno.test("what is skipped as binary is listed, in the working copy and in history, and the summary counts it", async () => {
  const key = `hf_${randomFrom(LETTERS, 34)}`;
  await using repo = await gitRepo({
    "README.md": "# app\n",
    "logo.png": new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d]),
  });
  await repo.git("add", ".");
  await repo.git("commit", "-qm", "start");
  await Deno.writeFile(`${repo.dir}/old.bin`, crypto.getRandomValues(new Uint8Array(1024)));
  await repo.git("add", "old.bin");
  await repo.git("commit", "-qm", "a binary, later removed");
  const commit = await repo.git("rev-parse", "HEAD");
  await repo.git("rm", "-q", "old.bin");
  await repo.git("commit", "-qm", "remove it");

  const clean = await runScanIn(repo.dir, ["--history"]);
  assert.equal(clean.code, 0, clean.stdout + clean.stderr);
  assert.match(clean.stderr, /^skipped logo\.png: binary$/m);
  assert.match(clean.stderr, new RegExp(`^skipped old\\.bin \\(commit ${commit}\\): binary$`, "m"));
  assert.match(
    clean.stdout,
    /Scanned 1 files, 0 versions from history: no provider credentials found\./,
  );
  assert.match(clean.stdout, /^Skipped as binary, not read: 2 \(named above\)\.$/m);

  await Deno.writeTextFile(`${repo.dir}/.env`, `HF_TOKEN=${key}\n`);
  const found = await runScanIn(repo.dir, []);
  assert.equal(found.code, 1);
  assert.match(found.stderr, /^skipped logo\.png: binary$/m);
  assert.match(found.stdout, /1 provider credential found in 1 file\./);
  assert.match(found.stdout, /^Skipped as binary, not read: 1 \(named above\)\.$/m);
});

const octalEscapes = (text: string) =>
  Array.from(text, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, "0")}`).join("");
const longUnicodeEscapes = (text: string) =>
  Array.from(text, (c) => `\\U${c.charCodeAt(0).toString(16).padStart(8, "0")}`).join("");
const decimalEntities = (text: string) => Array.from(text, (c) => `&#${c.charCodeAt(0)};`).join("");
const hexEntities = (text: string) =>
  Array.from(text, (c) => `&#x${c.charCodeAt(0).toString(16).toUpperCase()};`).join("");
const percentTwice = (text: string) => percentAll(text).replaceAll("%", "%25");

/**
 * Each family's keys written through `encode` wholly, and with only their dashes and underscores
 * encoded, in the lines `write` makes: each found once, at the first encoded character.
 */
function assertEncodedKeysFound(
  encode: (text: string) => string,
  writes: ReadonlyArray<[string, (encoded: string) => string]>,
) {
  for (const { make, kind } of FAMILIES) {
    for (let i = 0; i < 25; i++) {
      const key = make();
      const partly = key.replace(/[-_]/g, (c) => encode(c));
      for (const encoded of [encode(key), partly]) {
        for (const [file, write] of writes) {
          const line = write(encoded);
          assert.deepEqual(
            findings(line, file),
            [[1, line.indexOf(encoded) + 1, kind, maskSecret(key)]],
            `${file}: ${line}`,
          );
        }
      }
    }
  }
}

function assertClean(lines: readonly string[]) {
  for (const line of lines) {
    for (const file of ["page.html", "run.sh", "a.py"]) {
      assert.deepEqual(scanText(line, file), [], `${file}: ${line}`);
    }
  }
}

Deno.test("keys written as octal escapes are read as characters and found, in C strings and printf lines", () => {
  assertEncodedKeysFound(octalEscapes, [
    ["key.c", (e) => `const char *key = "${e}";`],
    ["run.sh", (e) => `printf '${e}' > .token`],
  ]);
  assertClean([
    String.raw`printf '\033[1mbold\033[0m and \011tabbed\012'`,
    String.raw`const char *path = "C:\\100\\200\\300";`,
  ]);
});

Deno.test("keys written as \\U0000xxxx escapes are read as characters and found", () => {
  assertEncodedKeysFound(longUnicodeEscapes, [
    ["key.py", (e) => `key = "${e}"`],
    ["notes.txt", (e) => `token: ${e}`],
  ]);
  assertClean([String.raw`smile = "\U0001F600 \U0001F680 and \U00000041\U00000042"`]);
});

Deno.test("keys written as HTML numeric character references, decimal or hex, are read as characters and found", () => {
  assertEncodedKeysFound(decimalEntities, [
    ["page.html", (e) => `<input type="hidden" value="${e}">`],
    ["mail.eml", (e) => `<p>Your key: ${e}</p>`],
  ]);
  assertEncodedKeysFound(hexEntities, [["page.html", (e) => `<code>${e}</code>`]]);
  assertClean([
    "<footer>&#169; 2026 Wallet Vault &#8212; all rights reserved &#x2014; &#60;key&#62;</footer>",
    `<p>${decimalEntities("A sentence written wholly as references, with no key.")}</p>`,
  ]);
});

Deno.test("keys percent-encoded twice (%25XX) are read as characters and found", () => {
  assertEncodedKeysFound(percentTwice, [
    ["links.txt", (e) => `https://login.example.test/?next=%2Fv1%3Fkey%3D${e}&x=1`],
  ]);
  assertClean([
    `https://example.test/?q=${percentTwice("Nothing here but a sentence, twice encoded.")}`,
    "progress: 100%25 done, 50%2525 of the rest",
  ]);
});

/** UTF-16LE bytes of `text`, as PowerShell's -EncodedCommand takes them. */
const utf16leBase64 = (text: string) => Buffer.from(text, "utf16le").toString("base64");

Deno.test("base64 (PowerShell's -EncodedCommand) and hex of UTF-16LE text are decoded and the key found at its place in the run", () => {
  for (const { make, kind, variable } of FAMILIES) {
    for (let i = 0; i < 25; i++) {
      const key = make();
      const before = `$env:${variable} = '`;
      const command = utf16leBase64(`${before}${key}'; python run.py`);
      const line = `powershell -NoProfile -EncodedCommand ${command}`;
      const start = line.indexOf(command);
      assert.deepEqual(findings(line, "run.ps1"), [[
        1,
        start + 1 + Math.floor((before.length * 2) / 3) * 4,
        `${kind}, UTF-16LE base64-encoded`,
        maskSecret(key),
      ]]);
      // The same text as hex, as a dumped buffer of UTF-16 holds it.
      const hexLine = `buffer 0x${Buffer.from(`${before}${key}'`, "utf16le").toString("hex")}`;
      assert.deepEqual(findings(hexLine, "dump.txt"), [[
        1,
        "buffer 0x".length + 1 + before.length * 4,
        `${kind}, UTF-16LE hex-encoded`,
        maskSecret(key),
      ]]);
    }
  }
  assertClean([
    `powershell -EncodedCommand ${utf16leBase64("Get-ChildItem -Recurse | Measure-Object")}`,
    `blob = "${utf16leBase64("Ünïcödé text, and 日本語 too, with no key in it at all.")}"`,
  ]);
});

Deno.test("a base64 run longer than the decoding limit is named on stderr with its line and column, and the summary says it was not read", async () => {
  const key = family("OpenAI project key").make();
  // Over the limit: not decoded, so the key inside is not found, and the report says so.
  const long = base64(`${"# padding line of an env file\n".repeat(300)}OPENAI_API_KEY=${key}\n`);
  assert.ok(long.length > 8192);
  // At the limit exactly: decoded, and its key found.
  const atLimit = base64(`OPENAI_API_KEY=${key}\n`.padStart(6144, "#"));
  assert.equal(atLimit.length, 8192);
  await using repo = await gitRepo({ "README.md": "# app\n" });
  await repo.git("add", ".");
  await repo.git("commit", "-qm", "start");
  await Deno.writeTextFile(`${repo.dir}/env.b64`, `# pasted\nblob: ${long}\n`);
  await repo.git("add", "env.b64");
  await repo.git("commit", "-qm", "a long run");
  const commit = await repo.git("rev-parse", "HEAD");
  await repo.git("rm", "-q", "env.b64");
  await repo.git("commit", "-qm", "removed");
  await Deno.writeTextFile(`${repo.dir}/now.b64`, `blob: ${long}\n`);

  const reason = (line: number, column: number) =>
    `a base64 run of ${long.length} characters at line ${line}, column ${column}, longer than ` +
    "the 8192 the scanner decodes: not decoded";
  const clean = await runScanIn(repo.dir, ["--history"]);
  assert.equal(clean.code, 0, clean.stdout + clean.stderr);
  assert.ok(clean.stderr.includes(`skipped now.b64: ${reason(1, 7)}\n`), clean.stderr);
  assert.ok(
    clean.stderr.includes(`skipped env.b64 (commit ${commit}): ${reason(2, 7)}\n`),
    clean.stderr,
  );
  assert.match(clean.stdout, /^Encoded runs too long to decode, not read: 2 \(named above\)\.$/m);

  await Deno.writeTextFile(`${repo.dir}/now.b64`, `blob: ${atLimit}\n`);
  const found = await runScanIn(repo.dir, []);
  assert.equal(found.code, 1, found.stdout + found.stderr);
  assert.doesNotMatch(found.stderr, /longer than/);
  assert.doesNotMatch(found.stdout, /Encoded runs too long/);
});
