/**
 * The key scanner finds the project's own live-run credentials (`wvlr_…`) by their format and
 * checksum: every real one, wherever it is written, and none of the look-alikes. Credentials are
 * generated at run time, so the repository holds none.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import {
  generateLiveRunCredential,
  isLiveRunCredential,
} from "../functions/_shared/auth/live-run-credential-format.ts";
import { maskSecret } from "../key-scanner/finding.ts";
import { LIVE_RUN_CREDENTIAL_KIND } from "../key-scanner/live-run.ts";
import { BASE62, randomFrom, scanText } from "./support/key-scan.ts";

const COUNT = 1000;

/** Where a credential is written: the file, the line, and the finding's kind suffix. */
const CONTEXTS: ReadonlyArray<[string, (credential: string) => string, string]> = [
  ["notes.md", (c) => `The render service uses ${c} until Friday.`, ""],
  ["notes.md", (c) => `Paste \`${c}\` into the runner's settings.`, ""],
  [".env", (c) => `WALLET_VAULT_LIVE_RUN_CREDENTIAL=${c}`, ""],
  ["config.json", (c) => `{"headers": {"x-service-server-secret": "${c}"}}`, ""],
  ["run.sh", (c) => `curl -H 'x-service-server-secret: ${c}' https://vault.test/reveal`, ""],
  ["server.ts", (c) => `const credential = "${c}";`, ""],
  ["deploy.yaml", (c) => `  liveRun: { credential: ${c} }`, ""],
  ["capture.har", (c) => `{"text": "line one\\n${c}\\n"}`, ""],
  ["link.txt", (c) => `https://runner.test/start?credential=${c}&step=2`, ""],
  [
    "secret.yaml",
    (c) => `  credential: ${Buffer.from(`LIVE_RUN=${c}`).toString("base64")}`,
    ", base64-encoded",
  ],
];

Deno.test("1,000 generated live-run credentials are each found once, with their kind, in assorted contexts", () => {
  for (let i = 0; i < COUNT; i++) {
    const credential = generateLiveRunCredential();
    const [file, write, suffix] = CONTEXTS[i % CONTEXTS.length];
    const line = write(credential);
    const findings = scanText(`first line\n${line}\n`, file);
    assert.deepEqual(
      findings.map((f) => [f.line, f.kind, f.masked]),
      [[2, `${LIVE_RUN_CREDENTIAL_KIND}${suffix}`, maskSecret(credential)]],
      `${file}: ${line.replace(credential, "<credential>")}`,
    );
    if (suffix === "") assert.equal(findings[0].column, line.indexOf(credential) + 1);
  }
});

/** One character of `text` at `index` replaced by another base62 character. */
function changeOne(text: string, index: number): string {
  const others = BASE62.replace(text[index], "");
  return text.slice(0, index) + randomFrom(others, 1) + text.slice(index + 1);
}

/** Look-alikes of a real credential that no rule may report. */
const NEAR_MISSES: ReadonlyArray<[string, (real: string) => string]> = [
  ["a random checksum", (real) => real.slice(0, -6) + randomFrom(BASE62, 6)],
  ["one character of the random part changed", (real) => changeOne(real, 5 + (real.length % 36))],
  ["one character of the checksum changed", (real) => changeOne(real, real.length - 3)],
  ["two characters swapped", (real) => real.slice(0, 10) + real[11] + real[10] + real.slice(12)],
  ["one character short", (real) => real.slice(0, 20) + real.slice(21)],
  ["one character long", (real) => real.slice(0, 20) + randomFrom(BASE62, 1) + real.slice(20)],
  ["the checksum cut off", (real) => real.slice(0, -6)],
  ["the prefix glued to a word", (real) => `token${real}`],
  ["the prefix glued to an underscore", (real) => `my_${real}`],
  ["a word glued to its end", (real) => `${real}x`],
  ["the prefix in capitals", (real) => `WVLR_${real.slice(5)}`],
  ["the prefix with a dash", (real) => `wvlr-${real.slice(5)}`],
  ["a character outside base62", (real) => `${real.slice(0, 15)}-${real.slice(16)}`],
];

/** Where a look-alike is written: places where nothing else would report it either. */
const PLAIN_CONTEXTS: ReadonlyArray<[string, (text: string) => string]> = [
  ["notes.md", (t) => `The sample ${t} is not a credential.`],
  [".env", (t) => `LIVE_RUN_SAMPLE=${t}`],
  ["fixture.json", (t) => `{"sample": "${t}"}`],
  ["sample.ts", (t) => `const sample = "${t}";`],
];

Deno.test("1,000 near-misses of live-run credentials are not reported: wrong checksum, one character off, wrong length, glued to a word", () => {
  for (let i = 0; i < COUNT; i++) {
    const [what, alter] = NEAR_MISSES[i % NEAR_MISSES.length];
    let near = alter(generateLiveRunCredential());
    // A swap of two equal characters changes nothing: drawn again.
    while (isLiveRunCredential(near) && what === "two characters swapped") {
      near = alter(generateLiveRunCredential());
    }
    assert.ok(!isLiveRunCredential(near), `${what}: still a credential`);
    const [file, write] = PLAIN_CONTEXTS[i % PLAIN_CONTEXTS.length];
    assert.deepEqual(scanText(write(near), file), [], `${what} in ${file}`);
  }
});
