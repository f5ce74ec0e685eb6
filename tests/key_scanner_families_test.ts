/**
 * Real-format tokens of every provider family the key scanner claims, from a table: many fresh
 * random tokens per family (full alphabets, letters-only bodies included), each found once, with
 * its family's kind, at its column. Also the generic evidence: prefix-less keys under
 * provider-named variables, `api_key=` and `Authorization: Bearer`. Every token is made at run
 * time (tests/support/key-scan.ts).
 */
import assert from "node:assert/strict";
import { maskSecret } from "../key-scanner/finding.ts";
import {
  BASE62,
  BASE64URL,
  LETTERS,
  OTHER_FAMILIES,
  randomFrom,
  scanText,
  TOKEN_FAMILIES,
} from "./support/key-scan.ts";

const PER_FAMILY = 200;

/** Where a token is written: a line holding it, and the file it is in. */
const CONTEXTS: ReadonlyArray<[string, (token: string, variable: string) => string]> = [
  ["notes.md", (token) => `Use ${token} for the run.`],
  [".env", (token, variable) => `${variable}=${token}`],
  ["config.json", (token, variable) => `{"${variable}": "${token}"}`],
];

function assertFoundOnce(line: string, file: string, token: string, kind: string, label: string) {
  const findings = scanText(`first line\n${line}\n`, file);
  assert.deepEqual(
    findings.map((f) => [f.line, f.column, f.kind, f.masked]),
    [[2, line.indexOf(token) + 1, kind, maskSecret(token)]],
    `${label} in ${file}: ${line.replace(token, "<token>")} (a ${token.length}-character token)`,
  );
}

Deno.test("real-format tokens of every provider family are found, 200 fresh ones per family, in prose, env and JSON", () => {
  for (const family of TOKEN_FAMILIES) {
    for (let i = 0; i < PER_FAMILY; i++) {
      const token = family.make();
      for (const [file, write] of CONTEXTS) {
        assertFoundOnce(write(token, family.variable), file, token, family.kind, family.name);
      }
    }
  }
});

Deno.test("Hugging Face tokens of letters only are found, even under HF_TOKEN", () => {
  // The format has no digit at all: a rule that wants one finds none of them.
  for (let i = 0; i < PER_FAMILY; i++) {
    const token = `hf_${randomFrom(LETTERS, 34)}`;
    assertFoundOnce(`HF_TOKEN=${token}`, ".env", token, "Hugging Face token (hf_…)", "hf_");
    const org = `api_org_${randomFrom(LETTERS, 34)}`;
    assertFoundOnce(
      `token: ${org}`,
      "config.yaml",
      org,
      "Hugging Face organisation token (api_org_…)",
      "api_org_",
    );
  }
});

Deno.test("Google API keys without a digit are found: 2,000 fresh keys, none missed", () => {
  // About one in 400 random AIza keys has no digit among its 35 characters.
  let digitless = 0;
  for (let i = 0; i < 2000 || digitless === 0; i++) {
    const body = i % 10 === 0 ? randomFrom(`${LETTERS}-_`, 35) : randomFrom(BASE64URL, 35);
    if (!/[0-9]/.test(body)) digitless++;
    const token = `AIza${body}`;
    assertFoundOnce(`key=${token}`, "settings.ini", token, "Google API key (AIza…)", "AIza");
  }
});

Deno.test("families secretlint's recommended preset knows are found too", () => {
  for (const family of OTHER_FAMILIES) {
    for (let i = 0; i < PER_FAMILY / 4; i++) {
      const token = family.make();
      for (const [file, write] of CONTEXTS) {
        assertFoundOnce(write(token, family.variable), file, token, family.kind, family.name);
      }
    }
  }
});

/** Names providers document for keys without a prefix of their own, and generic ones. */
const PROVIDER_VARIABLES = [
  "MISTRAL_KEY",
  "MISTRAL_API_KEY",
  "AZURE_OPENAI_KEY",
  "AZURE_OPENAI_API_KEY",
  "COHERE_KEY",
  "CO_API_KEY",
  "TOGETHER_KEY",
  "DEEPSEEK_KEY",
  "GEMINI_KEY",
  "PERPLEXITY_TOKEN",
  "FIREWORKS_KEY",
  "OPENROUTER_KEY",
  "ELEVENLABS_KEY",
  "STABILITY_KEY",
  "VOYAGE_KEY",
  "HF_TOKEN",
  "HUGGING_FACE_HUB_TOKEN",
  "OPENAI_KEY",
  "ANTHROPIC_KEY",
  "api_key",
  "apiKey",
];

Deno.test("prefix-less keys of 32 or more random characters under provider-named variables are found, letters-only ones too", () => {
  for (const name of PROVIDER_VARIABLES) {
    for (let i = 0; i < PER_FAMILY / 4; i++) {
      const alphabet = i % 4 === 0 ? LETTERS : i % 2 === 0 ? BASE64URL : BASE62;
      const value = randomFrom(alphabet, 32 + (i % 33));
      const kind = `value assigned to ${name}`;
      assertFoundOnce(`${name}=${value}`, ".env", value, kind, name);
      assertFoundOnce(`  ${name}: "${value}"`, "values.yaml", value, kind, name);
      assertFoundOnce(`const config = { ${name}: "${value}" };`, "app.ts", value, kind, name);
    }
  }
  // A command line's flag and a header, as a shell script or a request file writes them.
  const value = randomFrom(BASE62, 40);
  const flag = `mistral-cli chat --api-key=${value} --model large`;
  assertFoundOnce(flag, "run.sh", value, "value assigned to api-key", "--api-key");
  const header = `curl -H "x-api-key: ${value}" https://api.example.test/v1/messages`;
  assertFoundOnce(header, "run.sh", value, "value assigned to x-api-key", "x-api-key");
});

Deno.test("Authorization: Bearer with 32 or more random characters is found, in headers, curl lines and code; words and references are not", () => {
  const kind = "bearer token (Authorization: Bearer …)";
  for (let i = 0; i < PER_FAMILY; i++) {
    const alphabet = i % 4 === 0 ? LETTERS : i % 2 === 0 ? BASE64URL : BASE62;
    const value = randomFrom(alphabet, 32 + (i % 40));
    assertFoundOnce(`Authorization: Bearer ${value}`, "request.http", value, kind, "header");
    assertFoundOnce(
      `curl -H "Authorization: Bearer ${value}" https://api.example.test/v1/models`,
      "run.sh",
      value,
      kind,
      "curl",
    );
    assertFoundOnce(
      `fetch(url, { headers: { authorization: "bearer ${value}" } });`,
      "app.ts",
      value,
      kind,
      "code",
    );
  }
  // Words, identifiers, references and placeholders, under those names or after Bearer.
  const clean = [
    "MISTRAL_KEY=${MISTRAL_KEY}",
    "MISTRAL_KEY=",
    "AZURE_OPENAI_KEY=<your Azure OpenAI key>",
    "COHERE_KEY=your-cohere-key-goes-here",
    "HF_TOKEN=hf_...",
    "Authorization: Bearer ${token}",
    "Authorization: Bearer <token>",
    "Authorization: Bearer $(cat /run/secrets/token)",
    "headers: { Authorization: `Bearer ${session.accessToken}` }",
    "Send the access token as a Bearer token in the Authorization header of every request.",
    "hf_thisisalongidentifierwithoutanybreaks = 1",
    "api_org_settings_for_the_whole_organisation_page",
    "MISTRAL_KEY_NAME=primary-key-for-the-chat-route",
  ];
  for (const line of clean) {
    assert.deepEqual(scanText(line, "settings.env"), [], line);
    assert.deepEqual(scanText(line, "notes.md"), [], line);
  }
});
