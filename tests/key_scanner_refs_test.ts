/**
 * The key scanner over every ref (`--all-refs`: branches, tags, remote-tracking branches, every
 * stash entry, with their history), the allow-list that keeps known non-credentials out of the
 * report wherever in history they sit (by blob id or by a finding's fingerprint), and this
 * repository's whole history, which CI scans and which must stay clean.
 */
import assert from "node:assert/strict";
import { scanProject } from "../key-scanner/scan.ts";
import { gitRepo, ROOT, runScanIn, TOKEN_FAMILIES } from "./support/key-scan.ts";

const make = (name: string) => TOKEN_FAMILIES.find((f) => f.name === name)!.make();

Deno.test("--all-refs reads every branch, tag, remote-tracking branch and stash entry with their history; --history only HEAD's", async () => {
  const keys = {
    branch: make("Groq key"),
    tag: make("xAI key"),
    annotated: make("Replicate token"),
    stashTop: make("Anthropic key"),
    stashOld: make("Google API key"),
    stashUntracked: make("Hugging Face user token"),
    remote: make("OpenAI legacy key"),
  };
  await using repo = await gitRepo({ "README.md": "# app\n", "notes.md": "notes\n" });
  await repo.git("add", ".");
  await repo.git("commit", "-qm", "start");
  // A branch never merged, whose key was removed again on it.
  await repo.git("checkout", "-q", "-b", "experiment");
  await Deno.writeTextFile(`${repo.dir}/groq.env`, `GROQ_API_KEY=${keys.branch}\n`);
  await repo.git("add", "groq.env");
  await repo.git("commit", "-qm", "try groq");
  await repo.git("rm", "-q", "groq.env");
  await repo.git("commit", "-qm", "untry");
  // A tag on a commit no branch holds, and an annotated one.
  await repo.git("checkout", "-q", "--detach", "main");
  await Deno.writeTextFile(`${repo.dir}/xai.env`, `XAI_API_KEY=${keys.tag}\n`);
  await repo.git("add", "xai.env");
  await repo.git("commit", "-qm", "release candidate");
  await repo.git("tag", "rc1");
  await repo.git("rm", "-q", "xai.env");
  await Deno.writeTextFile(`${repo.dir}/r8.env`, `REPLICATE_API_TOKEN=${keys.annotated}\n`);
  await repo.git("add", "r8.env");
  await repo.git("commit", "-qm", "release");
  await repo.git("tag", "-a", "-m", "v1", "v1");
  await repo.git("checkout", "-q", "main");
  // Two stash entries: the older one is only in the stash's reflog. The top one also stashes an
  // untracked file (its own parentless commit).
  await Deno.writeTextFile(`${repo.dir}/notes.md`, `GOOGLE_API_KEY=${keys.stashOld}\n`);
  await repo.git("stash", "-q");
  await Deno.writeTextFile(`${repo.dir}/notes.md`, `ANTHROPIC_API_KEY=${keys.stashTop}\n`);
  await Deno.writeTextFile(`${repo.dir}/hf.env`, `HF_TOKEN=${keys.stashUntracked}\n`);
  await repo.git("stash", "-q", "-u");
  // A remote-tracking branch: work fetched from a clone, never merged or checked out here.
  await using other = await gitRepo({});
  await other.git("clone", "-q", `file://${repo.dir}`, "clone");
  await Deno.writeTextFile(`${other.dir}/clone/openai.env`, `OPENAI_API_KEY=${keys.remote}\n`);
  await other.git("-C", "clone", "add", "openai.env");
  await other.git("-C", "clone", "commit", "-qm", "remote work");
  await repo.git("remote", "add", "upstream", `file://${other.dir}/clone`);
  await repo.git("fetch", "-q", "upstream");

  const headOnly = await scanProject(repo.dir, { history: true });
  assert.deepEqual(headOnly.findings, [], "HEAD's history is clean");

  const all = await scanProject(repo.dir, { allRefs: true });
  const found = all.findings.map((f) => [f.file, f.masked]).sort();
  const expected = [
    ["groq.env", keys.branch],
    ["hf.env", keys.stashUntracked],
    ["notes.md", keys.stashOld],
    ["notes.md", keys.stashTop],
    ["openai.env", keys.remote],
    ["r8.env", keys.annotated],
    ["xai.env", keys.tag],
  ].map(([file, key]) => [file, `${key.slice(0, 4)}…(${key.length} chars)`]).sort();
  assert.deepEqual(found, expected);
  // Each names a commit that holds the key at that path.
  for (const finding of all.findings) {
    const commit = /^commit ([0-9a-f]{40})$/.exec(finding.source ?? "")![1];
    const text = await repo.git("show", `${commit}:${finding.file}`);
    assert.ok(Object.values(keys).some((key) => text.includes(key)), finding.file);
  }

  const cli = await runScanIn(repo.dir, ["--all-refs"]);
  assert.equal(cli.code, 1, cli.stderr);
  assert.match(cli.stdout, /7 provider credentials found in 6 files\./);
  const clean = await runScanIn(repo.dir, ["--history"]);
  assert.equal(clean.code, 0, clean.stdout + clean.stderr);
  assert.equal((await runScanIn(repo.dir, ["--all-refs", "."])).code, 2, "takes no paths");
});

Deno.test("the allow-list (.scan-keys-allow) drops findings by blob id anywhere in history, or by fingerprint anywhere", async () => {
  const [vector, fixtureKey, generated, leaked, stillLeaked] = [
    make("OpenAI project key"),
    make("Groq key"),
    make("xAI key"),
    make("Anthropic key"),
    make("Google API key"),
  ];
  await using repo = await gitRepo({
    "tests/vectors.txt": `a documented test vector: ${vector}\n`,
    // Not committed: the working copy's content is hashed as git would.
    "tests/generated.txt": `XAI_API_KEY=${generated}\n`,
    "tests/fixture.env": `GROQ_API_KEY=${fixtureKey}\n`,
    ".env": `ANTHROPIC_API_KEY=${leaked}\nGOOGLE_API_KEY=${stillLeaked}\n`,
  });
  await repo.git("add", "tests/vectors.txt", "tests/fixture.env", ".env");
  await repo.git("commit", "-qm", "fixtures and a leak");
  const generatedBlob = await repo.git("hash-object", "tests/generated.txt");
  const fixtureBlob = await repo.git("rev-parse", "HEAD:tests/fixture.env");
  // The fixture leaves the tree; only history holds its blob.
  await repo.git("rm", "-q", "tests/fixture.env", ".env");
  await repo.git("commit", "-qm", "drop them");

  const before = await runScanIn(repo.dir, ["--all-refs"]);
  assert.equal(before.code, 1);
  // Every finding prints its fingerprint, the allow-list's other key.
  const fingerprintOf = (key: string) =>
    new RegExp(`${key.slice(0, 4)}…\\(${key.length} chars\\).* fingerprint ([0-9a-f]{16})`)
      .exec(before.stdout)![1];
  const vectorFingerprint = fingerprintOf(vector);
  const leakedFingerprint = fingerprintOf(leaked);
  assert.notEqual(vectorFingerprint, leakedFingerprint);

  await Deno.writeTextFile(
    `${repo.dir}/.scan-keys-allow`,
    [
      "# Known non-credentials: each line an id and, after #, why.",
      `blob ${fixtureBlob}  # the groq fixture, generated`,
      `BLOB ${generatedBlob.toUpperCase()}`,
      `fingerprint ${vectorFingerprint}  # the documented test vector`,
      "",
    ].join("\n"),
  );
  const after = await runScanIn(repo.dir, ["--all-refs"]);
  assert.equal(after.code, 1, after.stderr);
  const reported = after.stdout.split("\n").filter((line) => /: .*…\(\d+ chars\)/.test(line));
  assert.deepEqual(reported.map((line) => line.split(":")[0]).sort(), [".env", ".env"]);
  assert.match(after.stdout, /2 provider credentials found in 1 file\./);
  assert.match(
    after.stdout,
    /^Allowed by \.scan-keys-allow: 3 \(2 by blob id, 1 by fingerprint\)\.$/m,
  );

  // Allowing the rest by fingerprint leaves the history clean.
  await Deno.writeTextFile(
    `${repo.dir}/.scan-keys-allow`,
    `fingerprint ${leakedFingerprint}\nfingerprint ${fingerprintOf(stillLeaked)}\n`,
    { append: true },
  );
  const clean = await runScanIn(repo.dir, ["--all-refs"]);
  assert.equal(clean.code, 0, clean.stdout);

  // A line that is neither is an error, not a silently ignored entry.
  await Deno.writeTextFile(`${repo.dir}/.scan-keys-allow`, `sha ${fixtureBlob}\n`);
  const bad = await runScanIn(repo.dir, ["--all-refs"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /\.scan-keys-allow:1: /);
});

Deno.test("this repository's every ref and their whole history scan clean, as CI runs it", async () => {
  const ci = await Deno.readTextFile(`${ROOT}/.ci/run`);
  assert.match(ci, /^npx -y deno@\$\{DENO_VERSION\} task scan --all-refs$/m);
  const { code, stdout, stderr } = await runScanIn(ROOT, ["--all-refs"]);
  assert.equal(code, 0, `${stdout}\n${stderr}`);
  assert.match(stdout, /versions from every ref's history/);
});
