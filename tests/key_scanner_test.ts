/**
 * The committed-key scanner on fixtures with planted keys and on clean files, through its module
 * and through `deno task scan`. Every key-shaped value is generated here at run time into a
 * temporary directory: this repository never holds one, and the project itself must scan clean.
 */
import assert from "node:assert/strict";
import { projectFiles } from "../key-scanner/git-index.ts";
import { type Finding, maskSecret } from "../key-scanner/finding.ts";
import { LineScanner } from "../key-scanner/line-scanner.ts";
import { scanPaths, scanProject } from "../key-scanner/scan.ts";
import { fixture, gitRepo, ROOT, runScanIn, scanOutput, scanText } from "./support/key-scan.ts";

// No vowels and no x: a random key can then never spell a placeholder word ("here", "your",
// "xxxx"…) by chance, which would make a test that expects a finding flaky.
const UPPER = "BCDFGHJKLMNPQRSTVWYZ";
const LOWER = "bcdfghjklmnpqrstvwyz";
const DIGITS = "0123456789";

function random(length: number, alphabet = UPPER + LOWER + DIGITS): string {
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  const chars = Array.from(bytes, (byte) => alphabet[byte % alphabet.length]);
  // Always a digit, at a random place (real keys of these lengths virtually always have one).
  if (!chars.some((c) => DIGITS.includes(c))) chars[bytes[0] % length] = DIGITS[bytes[1] % 10];
  return chars.join("");
}

/** Fake keys in the providers' documented shapes, made fresh for each run. */
function fakeKeys() {
  return {
    openai: `sk-proj-${random(48)}`,
    openaiLegacy: `sk-${random(48)}`,
    anthropic: `sk-ant-api03-${random(60)}`,
    aws: `AKIA${random(16, UPPER + DIGITS)}`,
    github: `ghp_${random(36)}`,
    githubPat: `github_pat_${random(22)}_${random(59)}`,
    slack: `xoxb-${random(12, DIGITS)}-${random(24)}`,
    google: `AIza${random(35)}`,
    huggingface: `hf_${random(34)}`,
    replicate: `r8_${random(37)}`,
    groq: `gsk_${random(52)}`,
    stripe: `sk_live_${random(32)}`,
  };
}

const KIND_OF: Record<keyof ReturnType<typeof fakeKeys>, string> = {
  openai: "OpenAI-style key (sk-…)",
  openaiLegacy: "OpenAI-style key (sk-…)",
  anthropic: "Anthropic-style key (sk-ant-…)",
  aws: "AWS access key id (AKIA…)",
  github: "GitHub token (ghp_…)",
  githubPat: "GitHub token (github_pat_…)",
  slack: "Slack token (xox…)",
  google: "Google API key (AIza…)",
  huggingface: "Hugging Face token (hf_…)",
  replicate: "Replicate token (r8_…)",
  groq: "Groq key (gsk_…)",
  stripe: "Stripe-style key (sk_live_…)",
};

/** `deno task scan` itself, as a developer runs it. */
const runScan = (args: string[], cwd = ROOT) => scanOutput(["task", "-q", "scan", ...args], cwd);

const where = (findings: readonly Finding[]) =>
  findings.map((f) => `${f.file.slice(f.file.lastIndexOf("/") + 1)}:${f.line}:${f.kind}`).sort();

/** Planted keys in recipe, prompt, env and code files; returns the files and every value. */
function plantedFiles() {
  const keys = fakeKeys();
  const assigned = {
    recipeKey: random(40),
    orgId: `org-${random(24)}`,
    secretKey: random(32),
    codeKey: random(40),
  };
  const files = {
    "recipes/portrait.recipe.json": JSON.stringify(
      {
        name: "portrait",
        steps: [{ kind: "image", provider: "provider_b", provider_b_key: assigned.recipeKey }],
      },
      null,
      2,
    ),
    "recipes/clip.yaml": [
      "name: clip",
      "steps:",
      "  - kind: video",
      `    provider_a_api_key: ${keys.openai}`,
      `    provider_a_org_id: ${assigned.orgId}`,
    ].join("\n"),
    "prompts/system.prompt.md": [
      "You are a helpful assistant.",
      `Upload results with ${keys.aws} and read models with ${keys.huggingface}.`,
      `When asked, use the gateway key ${keys.google}.`,
    ].join("\n"),
    ".env": [
      "# committed by mistake",
      `OPENAI_API_KEY=${keys.openaiLegacy}`,
      `ANTHROPIC_API_KEY="${keys.anthropic}"`,
      `export REPLICATE_API_TOKEN=${keys.replicate}`,
      `SLACK_BOT=${keys.slack}`,
      `GITHUB_TOKEN=${keys.github}`,
      `GH_PAT = '${keys.githubPat}'`,
      `GROQ=${keys.groq}`,
      `STRIPE=${keys.stripe}`,
      `MY_SERVICE_SECRET_KEY=${assigned.secretKey}`,
    ].join("\n"),
    "src/client.ts": `export const client = createClient({ apiKey: "${assigned.codeKey}" });\n`,
  };
  return { files, values: [...Object.values(keys), ...Object.values(assigned)] };
}

Deno.test("every provider key shape is found, on its own line, wherever it appears", () => {
  for (const [name, key] of Object.entries(fakeKeys())) {
    for (const line of [key, `value: "${key}"`, `see (${key}), then`, `url?token=${key}&x=1`]) {
      const findings = scanText(`first line\n${line}\n`, "notes.txt");
      assert.equal(findings.length, 1, `${name} in ${JSON.stringify(line.replace(key, "<key>"))}`);
      assert.equal(findings[0].kind, KIND_OF[name as keyof typeof KIND_OF]);
      assert.equal(findings[0].line, 2);
      assert.equal(findings[0].column, line.indexOf(key) + 1);
      assert.ok(!findings[0].masked.includes(key.slice(4)), "masked, never whole");
    }
  }
});

Deno.test("literals assigned to secret-type and *_API_KEY names are found; code variables not", () => {
  const value = random(32);
  const found = [
    `provider_b_key=${value}`,
    `PROVIDER_F_API_KEY: ${value}`,
    `"provider_e_key": "${value}"`,
    `export SOME_VENDOR_API_KEY='${value}'`,
    `aws_secret_access_key = ${value}`,
    `apiKey: "${value}"`,
    `VENDOR_SECRET_KEY="${value}" # rotate me`,
    `provider_a_org_id: org-${value}`,
  ];
  for (const line of found) {
    const findings = scanText(line, "recipe.yaml");
    assert.equal(findings.length, 1, line.replace(value, "<value>"));
    assert.match(findings[0].kind, /^value assigned to /);
    const token = line.includes("org-") ? `org-${value}` : value;
    assert.equal(findings[0].column, line.indexOf(token) + 1, line.replace(value, "<value>"));
  }
  // In code a bare value is an expression; a quoted literal is still a finding.
  assert.deepEqual(scanText(`const config = { provider_b_key: replacement };`, "a.ts"), []);
  assert.deepEqual(scanText(`headers: { apiKey: options.apiKey }`, "a.ts"), []);
  assert.equal(scanText(`const config = { provider_b_key: "${value}" };`, "a.ts").length, 1);
});

Deno.test("placeholders, references and ordinary text are not findings", () => {
  const clean = [
    "OPENAI_API_KEY=",
    "OPENAI_API_KEY=sk-...",
    "OPENAI_API_KEY=sk-…",
    "OPENAI_API_KEY=${OPENAI_API_KEY}",
    "OPENAI_API_KEY=$OPENAI_API_KEY",
    'OPENAI_API_KEY="$(cat /run/secrets/openai)"',
    "provider_b_key=<your provider B key>",
    "provider_b_key: your-key-here-1234",
    "PROVIDER_B_KEY=changeme",
    "X_API_KEY=xxxxxxxxxxxxxxxxxxxxxxxx",
    "X_API_KEY=****************",
    "AWS_ACCESS_KEY=AKIAIOSFODNN7EXAMPLE",
    "X_API_KEY=sk-live-0123456789abcdef",
    `const key = Deno.env.get("OPENAI_API_KEY");`,
    `const apiKey = process.env.OPENAI_API_KEY;`,
    `put(app.fetch, token, "provider_b_key", value);`,
    `{ "secretType": "provider_b_key", "value": "short" }`,
    "| provider_b_key | API key of provider B. Enables routing of image steps. |",
    "provider_f_api_key: API key of provider F, a gateway proxy.",
    "The task-manager-for-everything-and-more runs sk-style checks.",
    "SUPABASE_URL=https://abcd1234.supabase.co",
    `"integrity": "sha512-${random(60)}=="`,
    "ENCRYPTION_KEYS=k2:<base64>,k1:<base64>",
    `-----BEGIN PUBLIC KEY-----`,
  ];
  for (const line of clean) {
    assert.deepEqual(scanText(line, "settings.env"), [], line);
    assert.deepEqual(scanText(line, "settings.ts"), [], line);
  }
  // An explicit allow marker exempts its line only.
  const key = fakeKeys().openai;
  assert.deepEqual(scanText(`${key} # scan-keys:allow (test vector)`, "a.env"), []);
  assert.equal(scanText(`${key} # scan-keys:allow\n${key}`, "a.env").length, 1);
});

Deno.test("masking keeps at most four leading characters and the length", () => {
  assert.equal(maskSecret("sk-proj-abcdefghijklmnop"), "sk-p…(24 chars)");
  assert.equal(maskSecret("12345678"), "12…(8 chars)");
  for (const key of Object.values(fakeKeys())) {
    const masked = maskSecret(key);
    assert.ok(masked.startsWith(key.slice(0, 4)));
    assert.ok(!masked.includes(key.slice(4, 8)));
  }
});

Deno.test("scanning fixture files finds each planted key at its file and line", async () => {
  const { files, values } = plantedFiles();
  await using dir = await fixture({
    ...files,
    "image.png": new Uint8Array([
      0x89,
      0x50,
      0x4e,
      0x47,
      0,
      0,
      ...new TextEncoder().encode(values[0]),
    ]),
  });
  const report = await scanPaths([dir.dir]);
  assert.deepEqual(where(report.findings), [
    ".env:10:value assigned to MY_SERVICE_SECRET_KEY",
    ".env:2:OpenAI-style key (sk-…)",
    ".env:3:Anthropic-style key (sk-ant-…)",
    ".env:4:Replicate token (r8_…)",
    ".env:5:Slack token (xox…)",
    ".env:6:GitHub token (ghp_…)",
    ".env:7:GitHub token (github_pat_…)",
    ".env:8:Groq key (gsk_…)",
    ".env:9:Stripe-style key (sk_live_…)",
    "client.ts:1:value assigned to apiKey",
    "clip.yaml:4:OpenAI-style key (sk-…)",
    "clip.yaml:5:value assigned to provider_a_org_id",
    "portrait.recipe.json:7:value assigned to provider_b_key",
    "system.prompt.md:2:AWS access key id (AKIA…)",
    "system.prompt.md:2:Hugging Face token (hf_…)",
    "system.prompt.md:3:Google API key (AIza…)",
  ]);
  assert.equal(report.filesScanned, 5);
  assert.deepEqual(report.skipped, [{ file: `${dir.dir}/image.png`, reason: "binary" }]);
});

Deno.test("deno task scan prints file:line with masked values, the rotation advice, exits 1", async () => {
  const { files, values } = plantedFiles();
  await using dir = await fixture(files);
  const { code, stdout, stderr } = await runScan([dir.dir]);
  assert.equal(code, 1, stderr);
  assert.match(stdout, /\.env:2:\d+: OpenAI-style key \(sk-…\): sk-[A-Za-z0-9]…\(51 chars\)/);
  assert.match(stdout, /recipes\/portrait\.recipe\.json:7:\d+: value assigned to provider_b_key: /);
  assert.match(stdout, /16 provider credentials found in 5 files\./);
  assert.match(stdout, /compromised/);
  assert.match(stdout, /revoke it at the provider/);
  assert.match(stdout, /PUT \/api\/secrets/);
  for (const value of values) {
    assert.ok(!stdout.includes(value) && !stderr.includes(value), "no value is printed whole");
    assert.ok(!stdout.includes(value.slice(4, 12)), "nor most of one");
  }
});

Deno.test("clean files scan clean and exit 0", async () => {
  await using dir = await fixture({
    ".env.example": [
      "# Keys go in the vault (PUT /api/secrets), never here.",
      "OPENAI_API_KEY=",
      "PROVIDER_B_KEY=<your provider B key>",
      "ANTHROPIC_API_KEY=${ANTHROPIC_API_KEY}",
    ].join("\n"),
    "recipes/portrait.recipe.json": JSON.stringify({
      steps: [{ kind: "image", secretTypes: ["provider_b_key"], prompt: "prompts/portrait.md" }],
    }),
    "prompts/portrait.md": "A portrait in oil, soft light. Ask for the provider_b_key in the app.",
  });
  const { code, stdout } = await runScan([dir.dir]);
  assert.equal(code, 0, stdout);
  assert.match(stdout, /Scanned 3 files: no provider credentials found\./);
});

Deno.test("a path that does not exist is a usage error (exit 2), not a clean scan", async () => {
  const { code, stderr } = await runScan([`/nonexistent-${crypto.randomUUID()}`]);
  assert.equal(code, 2);
  assert.match(stderr, /No such file or directory/);
});

Deno.test("by default the scan covers git's files: tracked and new, never ignored", async () => {
  const { files } = plantedFiles();
  await using repo = await fixture({
    "tracked.env": files[".env"],
    "new-recipe.yaml": files["recipes/clip.yaml"],
    ".gitignore": "ignored.env\n",
    "ignored.env": files[".env"],
  });
  const git = (...args: string[]) =>
    new Deno.Command("git", { args, cwd: repo.dir, stdout: "null", stderr: "null" }).output();
  assert.ok((await git("init", "-q")).success);
  assert.ok((await git("add", "tracked.env", ".gitignore")).success);
  assert.deepEqual(await projectFiles(repo.dir), [".gitignore", "new-recipe.yaml", "tracked.env"]);
});

Deno.test("the project's own files scan clean", async () => {
  const { code, stdout, stderr } = await runScan([]);
  assert.equal(code, 0, `${stdout}\n${stderr}`);
  assert.match(stdout, /no provider credentials found/);
  const files = await projectFiles(ROOT);
  assert.ok(files.includes("key-scanner/scan.ts") && files.includes("README.md"));
});

// ---------------------------------------------------------------------------------------------
// Encodings, sizes, git's index and history, links, and placeholders that are not.

function utf16(text: string, order: "le" | "be", bom: boolean): Uint8Array {
  const bytes = new Uint8Array((bom ? 2 : 0) + text.length * 2);
  const view = new DataView(bytes.buffer);
  if (bom) view.setUint16(0, 0xfeff, order === "le");
  for (let i = 0; i < text.length; i++) {
    view.setUint16((bom ? 2 : 0) + i * 2, text.charCodeAt(i), order === "le");
  }
  return bytes;
}

Deno.test("a UTF-16 .env (as PowerShell writes it), with or without a byte-order mark, is decoded and scanned", async () => {
  const keys = fakeKeys();
  const text = `# PowerShell: "OPENAI_API_KEY=..." > .env\r\nOPENAI_API_KEY=${keys.openai}\r\n` +
    `HF=${keys.huggingface}\r\n`;
  await using dir = await fixture({
    "le-bom.env": utf16(text, "le", true),
    "le.env": utf16(text, "le", false),
    "be-bom.env": utf16(text, "be", true),
  });
  const report = await scanPaths([dir.dir]);
  assert.deepEqual(report.skipped, []);
  assert.equal(report.filesScanned, 3);
  for (const file of ["le-bom.env", "le.env", "be-bom.env"]) {
    const found = report.findings.filter((f) => f.file.endsWith(`/${file}`));
    assert.deepEqual(
      found.map((f) => [f.line, f.column, f.kind]),
      [[2, 16, KIND_OF.openai], [3, 4, KIND_OF.huggingface]],
      file,
    );
  }
});

Deno.test("a text file with a NUL in its first 8 KB is scanned; a binary file is still skipped", async () => {
  const key = fakeKeys().openai;
  await using dir = await fixture({
    "stray-nul.env": `\0# exported by a tool that wrote a NUL first\nOPENAI_API_KEY=${key}\n`,
    "image.png": new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d]),
    "random.bin": crypto.getRandomValues(new Uint8Array(4096)).map((b, i) => i % 7 ? b : 0),
  });
  const report = await scanPaths([dir.dir]);
  assert.deepEqual(where(report.findings), ["stray-nul.env:2:OpenAI-style key (sk-…)"]);
  assert.deepEqual(report.skipped.map((s) => [s.file.slice(dir.dir.length + 1), s.reason]), [
    ["image.png", "binary"],
    ["random.bin", "binary"],
  ]);
});

Deno.test("files over 5 MB are scanned in pieces: keys at the end, and on one very long line, are found", async () => {
  const keys = [fakeKeys().openai, fakeKeys().github, fakeKeys().aws];
  const filler = "lorem ipsum dolor sit amet, consectetur adipiscing elit\n".repeat(110_000);
  // A minified bundle: 6 MB on one line, keys near the start, in the middle and at the end.
  // Not one run of base64 or hex, which would be too long to decode and named as not read.
  const chunk = "a;".repeat(1_499_975);
  const oneLine = `x=${keys[0]};${chunk};${keys[1]};${chunk};${keys[2]}`;
  await using dir = await fixture({
    "big.log": `${filler}OPENAI_API_KEY=${keys[0]}\n`,
    "bundle.min.js": oneLine,
  });
  assert.ok((await Deno.stat(`${dir.dir}/big.log`)).size > 5 * 1024 * 1024);
  const report = await scanPaths([dir.dir]);
  assert.deepEqual(report.skipped, []);
  const found = report.findings.map((f) => [f.file.slice(dir.dir.length + 1), f.line, f.column]);
  assert.deepEqual(found, [
    ["big.log", 110_001, 16],
    ["bundle.min.js", 1, 3],
    ["bundle.min.js", 1, oneLine.indexOf(keys[1]) + 1],
    ["bundle.min.js", 1, oneLine.indexOf(keys[2]) + 1],
  ]);
});

Deno.test("a key across a segment cut of a long line is found once, at its column, wherever the cut falls", () => {
  const key = fakeKeys().openai; // 56 characters
  const options = { segmentChars: 300, overlapChars: 100, contextChars: 20 };
  for (let at = 0; at < 700; at++) {
    const line = `${"=".repeat(at)} ${key} ${"=".repeat(900 - at)}`;
    // Pushed in uneven pieces, as a decoder delivers them.
    const scanner = new LineScanner("bundle.js", options);
    for (let i = 0; i < line.length; i += 37) scanner.push(line.slice(i, i + 37));
    const findings = scanner.end();
    assert.deepEqual(
      findings.map((f) => [f.line, f.column, f.masked]),
      [[1, at + 2, maskSecret(key)]],
      `key at ${at}`,
    );
  }
});

Deno.test("staged content that differs from the working copy is scanned and marked staged", async () => {
  const key = fakeKeys().anthropic;
  await using repo = await gitRepo({ "clean.md": "nothing here\n" });
  await repo.git("add", "clean.md");
  await repo.git("commit", "-qm", "first");
  await Deno.writeTextFile(`${repo.dir}/.env`, `ANTHROPIC_API_KEY=${key}\n`);
  await repo.git("add", ".env");
  // The working copy was cleaned up, but the key is what the next commit would hold.
  await Deno.writeTextFile(`${repo.dir}/.env`, "ANTHROPIC_API_KEY=\n");
  const { code, stdout, stderr } = await runScanIn(repo.dir);
  assert.equal(code, 1, stderr);
  assert.match(
    stdout,
    /^\.env:1:19: Anthropic-style key \(sk-ant-…\): sk-a…\(73 chars\) \(staged\) fingerprint [0-9a-f]{16}$/m,
  );
  assert.ok(!stdout.includes(key.slice(4, 12)));
});

Deno.test("a staged file deleted from the working copy is scanned from the index, not a failure", async () => {
  const key = fakeKeys().groq;
  await using repo = await gitRepo({ "recipe.yaml": `provider_e_key: ${key}\n` });
  await repo.git("add", "recipe.yaml");
  await Deno.remove(`${repo.dir}/recipe.yaml`);
  const { code, stdout, stderr } = await runScanIn(repo.dir);
  assert.equal(code, 1, stderr);
  assert.match(
    stdout,
    /^recipe\.yaml:1:17: Groq key \(gsk_…\): gsk_…\(56 chars\) \(staged\) fingerprint [0-9a-f]{16}$/m,
  );
});

Deno.test("--history finds keys in every commit reachable from HEAD, each with a commit that holds it", async () => {
  const [gone, sideBranch, unmerged] = [fakeKeys().openai, fakeKeys().stripe, fakeKeys().github];
  await using repo = await gitRepo({ "README.md": "# app\n" });
  await repo.git("add", ".");
  await repo.git("commit", "-qm", "start");
  // A key committed, then removed: the working copy and the index are clean.
  await Deno.writeTextFile(`${repo.dir}/.env`, `OPENAI_API_KEY=${gone}\n`);
  await repo.git("add", ".env");
  await repo.git("commit", "-qm", "oops");
  await repo.git("rm", "-q", ".env");
  await repo.git("commit", "-qm", "remove .env");
  // One on a branch that was merged (and removed there), one on a branch never merged.
  await repo.git("checkout", "-q", "-b", "side");
  await Deno.mkdir(`${repo.dir}/conf`);
  await Deno.writeTextFile(`${repo.dir}/conf/pay.yaml`, `stripe: ${sideBranch}\n`);
  await repo.git("add", "conf");
  await repo.git("commit", "-qm", "pay");
  await repo.git("rm", "-q", "-r", "conf");
  await repo.git("commit", "-qm", "unpay");
  await repo.git("checkout", "-q", "main");
  await Deno.writeTextFile(`${repo.dir}/README.md`, "# app, on main\n");
  await repo.git("commit", "-qam", "main moves");
  await repo.git("merge", "-q", "--no-edit", "side");
  await repo.git("checkout", "-q", "-b", "elsewhere", "HEAD~1");
  await Deno.writeTextFile(`${repo.dir}/token.txt`, `${unmerged}\n`);
  await repo.git("add", "token.txt");
  await repo.git("commit", "-qm", "not on main");
  await repo.git("checkout", "-q", "main");

  const plain = await runScanIn(repo.dir);
  assert.equal(plain.code, 0, plain.stdout + plain.stderr);

  const { code, stdout, stderr } = await runScanIn(repo.dir, ["--history"]);
  assert.equal(code, 1, stderr);
  const lines = stdout.split("\n").filter((line) => /\(commit [0-9a-f]{40}\) /.test(line)).sort();
  assert.equal(lines.length, 2, stdout);
  const expected = [
    [".env", "1:16: OpenAI-style key", gone],
    ["conf/pay.yaml", "1:9: Stripe-style key", sideBranch],
  ] as const;
  for (const [index, [path, at, key]] of expected.entries()) {
    const line = lines[index];
    assert.ok(line.startsWith(`${path}:${at}`), line);
    // The commit named holds the key at that path.
    const commit = /\(commit ([0-9a-f]{40})\) /.exec(line)![1];
    assert.ok((await repo.git("show", `${commit}:${path}`)).includes(key), line);
  }
  assert.ok(!stdout.includes(gone.slice(4, 12)) && !stdout.includes(sideBranch.slice(8, 16)));
  assert.match(stdout, /2 provider credentials found/);

  const withPaths = await runScanIn(repo.dir, ["--history", "."]);
  assert.equal(withPaths.code, 2);
});

Deno.test("links inside the project are followed, links out of it are skipped and named", async () => {
  const [inside, outside] = [fakeKeys().replicate, fakeKeys().google];
  await using elsewhere = await fixture({ "secret.env": `GOOGLE_KEY=${outside}\n` });
  // config/ is ignored: its file is reached only through the tracked link.
  await using repo = await gitRepo({
    ".gitignore": "config/\n",
    "config/real.yaml": `provider_b_key: ${inside}\n`,
  });
  await Deno.symlink("config/real.yaml", `${repo.dir}/recipe.yaml`);
  await Deno.symlink(`${elsewhere.dir}/secret.env`, `${repo.dir}/outside.env`);
  await Deno.symlink(".", `${repo.dir}/loop`);
  await repo.git("add", ".gitignore", "recipe.yaml", "outside.env", "loop");
  const { code, stdout, stderr } = await runScanIn(repo.dir);
  assert.equal(code, 1, stderr);
  assert.match(stdout, /^recipe\.yaml:1:17: Replicate token \(r8_…\): /m);
  assert.match(stdout, /1 provider credential found in 1 file\./);
  assert.match(stderr, /skipped outside\.env: link to outside the tree, not followed/);
});

/** Letters alternating upper and lower case: random, and never a typed run. */
function mixedCase(length: number): string {
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  return Array.from(bytes, (byte, i) => (i % 2 === 0 ? UPPER : LOWER)[byte % 20]).join("");
}

Deno.test("a real key that contains 'here', 'your', 'xxx' between its dashes or a run like 'abcdef' is still a key", () => {
  const body = random(40);
  const keys = [
    `sk-proj-${body.slice(0, 12)}here${body.slice(12)}`,
    // base64url keys split at - and _ into parts, and a part may be a placeholder word by chance,
    // or the last part a single character after parts of letters.
    `sk-proj-${body.slice(0, 20)}-here-${body.slice(20)}`,
    `sk-proj-${body.slice(0, 20)}_xxx_${body.slice(20)}`,
    `glpat-${mixedCase(8)}-${mixedCase(8)}-${mixedCase(2)}_${mixedCase(1)}`,
    // Nor is a reference's name inside a key a reference.
    `sk-proj-${body.slice(0, 20)}geTENv${body.slice(20)}`,
    `sk-proj-${body.slice(0, 20)}abcdef${body.slice(20)}`,
    `sk-${body.slice(0, 5)}Your${body.slice(5)}0123456`,
    `ghp_${body.slice(0, 30)}xxxx${body.slice(30, 36)}`,
  ];
  for (const key of keys) {
    const found = scanText(`OPENAI=${key}\n`, "a.env");
    assert.equal(found.length, 1, key.slice(0, 3));
    assert.equal(found[0].column, 8);
  }
  const assigned = `${body.slice(0, 10)}here${body.slice(10, 20)}abcdefgh${body.slice(20)}`;
  assert.equal(scanText(`VENDOR_API_KEY=${assigned}`, "a.env").length, 1);
  // Still placeholders: whole words, elisions, templates, typed runs (after words too).
  for (
    const value of [
      "your_api_key_here",
      "YOUR-API-KEY-HERE-123",
      "sk-...",
      "<your-key>",
      "sk-xxxxxxxxxxxxxxxxxxxxxxxx",
      "sk-proj-xxxx-xxxx-1234",
      "sk-1234567890abcdefghij",
      "sk-ideographic-0123456789",
      "sk-other-creator-value-1",
      "AKIAIOSFODNN7EXAMPLE",
      "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ]
  ) {
    assert.deepEqual(scanText(`OPENAI_API_KEY=${value}`, "a.env"), [], value);
  }
});

Deno.test("files git does not compare with the working copy (assume-unchanged, skip-worktree) are read from the index, with or without --history", async () => {
  const [hidden, sparse, kept, linked] = [
    fakeKeys().openai,
    fakeKeys().huggingface,
    fakeKeys().github,
    fakeKeys().anthropic,
  ];
  await using repo = await gitRepo({
    "a.env": `OPENAI_API_KEY=${hidden}\n`,
    "b.env": `HF_TOKEN=${sparse}\n`,
    "c.env": `GITHUB_TOKEN=${kept}\n`,
    "d.env": `ANTHROPIC_API_KEY=${linked}\n`,
  });
  await repo.git("add", ".");
  await repo.git("commit", "-qm", "leak");
  // a.env was cleaned in the working copy, but git is told not to look; b.env is left out, as a
  // sparse checkout leaves a file out. `ls-files -m` lists neither.
  await repo.git("update-index", "--assume-unchanged", "a.env");
  await Deno.writeTextFile(`${repo.dir}/a.env`, "OPENAI_API_KEY=${OPENAI_API_KEY}\n");
  await repo.git("update-index", "--skip-worktree", "b.env");
  await Deno.remove(`${repo.dir}/b.env`);
  // c.env is flagged too, but its working copy still holds what was staged: found there, once.
  await repo.git("update-index", "--assume-unchanged", "c.env");
  // d.env is flagged and now a link to the same text outside the project, which the scan does not
  // follow: what git holds is read from the index.
  await repo.git("update-index", "--assume-unchanged", "d.env");
  const outside = await Deno.makeTempFile();
  await Deno.writeTextFile(outside, `ANTHROPIC_API_KEY=${linked}\n`);
  await Deno.remove(`${repo.dir}/d.env`);
  await Deno.symlink(outside, `${repo.dir}/d.env`);
  for (const history of [false, true]) {
    const report = await scanProject(repo.dir, { history });
    assert.deepEqual(
      report.findings.map((f) => [f.file, f.line, f.column, f.kind, f.source]),
      [
        ["c.env", 1, 14, KIND_OF.github, undefined],
        ["a.env", 1, 16, KIND_OF.openai, "staged"],
        ["b.env", 1, 10, KIND_OF.huggingface, "staged"],
        ["d.env", 1, 19, KIND_OF.anthropic, "staged"],
      ],
      `history: ${history}`,
    );
    assert.deepEqual(
      report.skipped.map((skip) => skip.file),
      ["d.env"],
      "b.env is read from the index, not skipped; d.env's link leaves the project",
    );
  }
});

Deno.test("a key right after an escape or a percent-encoding is found, at its column", () => {
  const keys = fakeKeys();
  // JSON strings (notebooks, HAR files) and URLs: the encoding's last character is a letter or
  // digit glued to the key.
  const cases: Array<[string, keyof typeof keys]> = [
    [`{"text": "line1\\n${keys.openai}"}`, "openai"],
    [`{"text": "key:\\t${keys.anthropic}"}`, "anthropic"],
    [`{"text": "\\u0022${keys.github}\\u0022"}`, "github"],
    [`https://example.test/?key%3D${keys.google}&v=1`, "google"],
    [`Authorization=Bearer%20${keys.openaiLegacy}`, "openaiLegacy"],
    [`q=%22${keys.aws}%22`, "aws"],
    [`q=%E2%80%9C${keys.replicate}%E2%80%9D`, "replicate"],
  ];
  for (const [line, name] of cases) {
    const findings = scanText(`first line\n${line}\n`, "capture.har");
    const shown = line.replace(keys[name], "<key>");
    assert.deepEqual(
      findings.map((f) => [f.line, f.column, f.kind]),
      [[2, line.indexOf(keys[name]) + 1, KIND_OF[name]]],
      shown,
    );
  }
  // Not an encoding: `%DE…` starts a Windows variable reference here, not a value.
  assert.deepEqual(scanText("set OPENAI_API_KEY=%DEV_KEY_2%", "setup.bat"), []);
});

Deno.test("literals assigned by subscript, to an attribute, in escaped notebook source or by Dockerfile ENV are found", () => {
  const value = random(32);
  const found: Array<[string, string, string]> = [
    ["app.py", `os.environ["MISTRAL_API_KEY"] = "${value}"`, "MISTRAL_API_KEY"],
    ["app.py", `os.environ[ 'COHERE_API_KEY' ] = '${value}'`, "COHERE_API_KEY"],
    ["app.js", `process.env.MISTRAL_API_KEY = "${value}";`, "MISTRAL_API_KEY"],
    ["app.py", `client.api_key = "${value}"`, "api_key"],
    ["app.ts", `config["apiKey"] = "${value}";`, "apiKey"],
    [
      "demo.ipynb",
      `    "os.environ[\\"MISTRAL_API_KEY\\"] = \\"${value}\\"\\n",`,
      "MISTRAL_API_KEY",
    ],
    ["Dockerfile", `ENV MISTRAL_API_KEY ${value}`, "MISTRAL_API_KEY"],
    // JSON held in a JSON string (a saved request, a Postman collection): its values stay quoted.
    ["request.json", `"{\\"MISTRAL_API_KEY\\": \\"${value}\\"}"`, "MISTRAL_API_KEY"],
    ["collection.json", `{"raw": "{\\"api_key\\":\\"${value}\\"}"}`, "api_key"],
    // An assignment inside another's value, and a value wholly in escaped quotes.
    ["demo.ipynb", `    "client = Client(api_key=\\"${value}\\")\\n",`, "api_key"],
    ["data.json", `{"api_key": "\\"${value}\\""}`, "api_key"],
    ["app.env", `MISTRAL_API_KEY="\\"${value}\\""`, "MISTRAL_API_KEY"],
    // An escape inside the quotes is not part of the value.
    ["data.json", `{"api_key": "${value}\\n"}`, "api_key"],
  ];
  for (const [file, line, name] of found) {
    const shown = line.replace(value, "<value>");
    assert.deepEqual(
      scanText(line, file).map((f) => [f.column, f.kind]),
      [[line.indexOf(value) + 1, `value assigned to ${name}`]],
      shown,
    );
  }
  // Code that assigns a variable, a call or a reference: not a literal.
  const quiet: Array<[string, string]> = [
    ["app.ts", "this.apiKey = apiKey;"],
    ["app.ts", "config.apiKey = options.apiKey;"],
    ["app.js", "process.env.MISTRAL_API_KEY = readKey2();"],
    ["app.py", `client.api_key = os.environ["MISTRAL_API_KEY"]`],
    ["Dockerfile", "ENV MISTRAL_API_KEY ${MISTRAL_API_KEY}"],
    ["collection.json", `{"raw": "{\\"api_key\\": apiKey}"}`],
    ["collection.json", `{"raw": "{\\"api_key\\": \\"{{apiKey}}\\"}"}`],
    // Interpolations in JSON built inside a string: Python and C#, Ruby, Swift.
    ["app.py", `body = f"{{\\"api_key\\": \\"{api_key_v2}\\"}}"`],
    ["app.rb", `body = "{\\"api_key\\": \\"#{key_v2}\\"}"`],
    ["App.swift", `let body = "{\\"apiKey\\": \\"\\(apiKey1)\\"}"`],
  ];
  for (const [file, line] of quiet) assert.deepEqual(scanText(line, file), [], line);
  // An assignment inside a bare value: a key in a URL's query string.
  const url = `API_URL=https://api.example.test/v1?api_key=${value}`;
  assert.deepEqual(
    scanText(url, "settings.env").map((f) => [f.column, f.masked]),
    [[url.indexOf(value) + 1, maskSecret(value)]],
  );
});

Deno.test("--history on a shallow clone reads what the clone holds, warns, and says so in the summary", async () => {
  const key = fakeKeys().openai;
  await using origin = await gitRepo({ ".env": `OPENAI_API_KEY=${key}\n` });
  await origin.git("add", ".env");
  await origin.git("commit", "-qm", "leak");
  await origin.git("rm", "-q", ".env");
  await Deno.writeTextFile(`${origin.dir}/README.md`, "# app\n");
  await origin.git("add", "README.md");
  await origin.git("commit", "-qm", "remove the key");
  await using clones = await fixture({});
  await origin.git("clone", "-q", "--depth", "1", `file://${origin.dir}`, `${clones.dir}/shallow`);
  await origin.git("clone", "-q", `file://${origin.dir}`, `${clones.dir}/full`);

  // CI may check out a shallow clone: not a failure, but not a clean bill for the whole history.
  const shallow = await runScanIn(`${clones.dir}/shallow`, ["--history"]);
  assert.equal(shallow.code, 0, shallow.stdout + shallow.stderr);
  assert.match(shallow.stderr, /warning: this is a shallow clone: --history read only the commits/);
  assert.match(
    shallow.stdout,
    /versions from history \(shallow clone: only the commits it holds\): no provider credentials/,
  );
  // The full history holds the key.
  const full = await runScanIn(`${clones.dir}/full`, ["--history"]);
  assert.equal(full.code, 1, full.stderr);
  assert.ok(!`${full.stdout}${full.stderr}`.includes("shallow"));
});
