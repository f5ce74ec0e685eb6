/**
 * No error repeats what the caller sent. A creator who pastes a key into the wrong place — as a
 * JSON key, a field's value, a path, a token — must not get it back in an error body, where
 * logs, screenshots and support tickets keep it. Every route, through /api and the function URLs,
 * with a fresh hostile key and value in every position the body, path and headers offer; the only
 * names an error may carry are the service's own (field names, secret types, limits).
 */
import assert from "node:assert/strict";
import { buildSiweMessage } from "../functions/_shared/auth/siwe.ts";
import { bearer, newWallet, signIn, type TestApp } from "./support/app.ts";
import { describeWithDatabase } from "./support/suite.ts";

/** A pasted provider key, fresh for every request, so a match can only be an echo. */
const pasted = () =>
  `sk-proj-${
    Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) => b.toString(16).padStart(2, "0"))
      .join("")
  }`;

interface Attempt {
  readonly label: string;
  readonly path: string;
  readonly method: string;
  readonly headers: Record<string, string>;
  /** The JSON text of the body, or raw text. */
  readonly body: string | null;
  /** Every hostile string in this attempt: none may come back. */
  readonly hostile: readonly string[];
}

/** The body shapes each route's fields allow, to put the hostile text in and around them. */
function bodies(
  fields: Record<string, unknown>,
): Array<{ label: string; body: string; hostile: string[] }> {
  const out: Array<{ label: string; body: string; hostile: string[] }> = [];
  const key = pasted();
  const value = pasted();
  out.push({ label: "an unknown key alone", body: JSON.stringify({ [key]: 1 }), hostile: [key] });
  out.push({
    label: "an unknown key beside valid fields",
    body: JSON.stringify({ ...fields, [key]: value }),
    hostile: [key, value],
  });
  for (const field of Object.keys(fields)) {
    const v = pasted();
    // A value field takes any one-line text (that is what it is for), so that body is no error.
    if (field !== "value") {
      out.push({
        label: `${field} holding a pasted key`,
        body: JSON.stringify({ ...fields, [field]: v }),
        hostile: [v],
      });
    }
    const inner = pasted();
    const innerValue = pasted();
    out.push({
      label: `${field} holding an object keyed by a pasted key`,
      body: JSON.stringify({ ...fields, [field]: { [inner]: innerValue } }),
      hostile: [inner, innerValue],
    });
    const listed = pasted();
    out.push({
      label: `${field} holding a list with a pasted key`,
      body: JSON.stringify({ ...fields, [field]: [listed] }),
      hostile: [listed],
    });
    const withBreak = `${pasted()}\n`;
    out.push({
      label: `${field} holding a pasted key and a line break`,
      body: JSON.stringify({ ...fields, [field]: withBreak }),
      hostile: [withBreak.trim()],
    });
  }
  const raw = pasted();
  out.push({ label: "a bare string body", body: JSON.stringify(raw), hostile: [raw] });
  const broken = pasted();
  out.push({ label: "malformed JSON", body: `{"${broken}": `, hostile: [broken] });
  return out;
}

function attempts(
  session: string,
  revealToken: string,
): Attempt[] {
  const json = { "content-type": "application/json" };
  const routes: Array<{
    paths: string[];
    method: string;
    headers: Record<string, string>;
    fields: Record<string, unknown>;
  }> = [
    {
      paths: ["/api/auth/nonce", "/functions/v1/wallet-proof/nonce"],
      method: "POST",
      headers: json,
      fields: { address: "0x" + "ab".repeat(20), chainId: 1 },
    },
    {
      paths: ["/api/auth/wallet-proof", "/functions/v1/wallet-proof"],
      method: "POST",
      headers: json,
      fields: { message: "not a message", signature: "0x" },
    },
    {
      paths: ["/api/auth/refresh", "/functions/v1/wallet-proof/refresh"],
      method: "POST",
      headers: json,
      fields: { refresh_token: "x".repeat(43) },
    },
    {
      paths: ["/api/auth/logout", "/functions/v1/wallet-proof/logout"],
      method: "POST",
      headers: bearer(session, json),
      fields: { scope: "local" },
    },
    {
      paths: ["/api/secrets", "/functions/v1/user-secrets"],
      method: "PUT",
      headers: bearer(session, json),
      fields: { secretType: "provider_b_key", value: "sk-valid-but-not-alone-0123456789" },
    },
    {
      paths: ["/api/secrets", "/functions/v1/user-secrets"],
      method: "DELETE",
      headers: bearer(session, json),
      fields: { secretType: "provider_b_key" },
    },
    {
      paths: ["/api/secrets/reveal", "/functions/v1/user-secrets/reveal"],
      method: "POST",
      headers: bearer(session, { ...json, "x-service-server-secret": revealToken }),
      fields: { secretTypes: ["provider_b_key"] },
    },
  ];
  const all: Attempt[] = [];
  for (const route of routes) {
    for (const path of route.paths) {
      for (const { label, body, hostile } of bodies(route.fields)) {
        all.push({
          label: `${route.method} ${path}: ${label}`,
          path,
          method: route.method,
          headers: route.headers,
          body,
          hostile,
        });
      }
    }
  }
  // The path, the token and the reveal header carry pasted keys too.
  const inPath = pasted();
  for (const path of [`/api/auth/${inPath}`, `/api/secrets/${inPath}`, `/functions/v1/${inPath}`]) {
    all.push({
      label: `a path with a pasted key`,
      path,
      method: "POST",
      headers: json,
      body: "{}",
      hostile: [inPath],
    });
  }
  const asToken = pasted();
  all.push({
    label: "a pasted key as the bearer token",
    path: "/api/secrets",
    method: "GET",
    headers: bearer(asToken),
    body: null,
    hostile: [asToken],
  });
  const asReveal = pasted();
  all.push({
    label: "a pasted key as the reveal token",
    path: "/api/secrets/reveal",
    method: "POST",
    headers: bearer(session, { ...json, "x-service-server-secret": asReveal }),
    body: "{}",
    hostile: [asReveal],
  });
  return all;
}

async function send(app: TestApp, attempt: Attempt): Promise<{ status: number; text: string }> {
  const response = await app.fetch(attempt.path, {
    method: attempt.method,
    headers: attempt.headers,
    body: attempt.body,
  });
  const headerText = [...response.headers].map(([k, v]) => `${k}: ${v}`).join("\n");
  return { status: response.status, text: `${headerText}\n${await response.text()}` };
}

describeWithDatabase("errors never echo what the caller sent", {
  async "every route, in every position: a pasted key never comes back in an error"(app) {
    const creator = await signIn(app);
    const failures: string[] = [];
    let count = 0;
    for (const attempt of attempts(creator.accessToken, app.config.serverRevealToken)) {
      const { status, text } = await send(app, attempt);
      count += 1;
      if (status < 400 || status >= 500) failures.push(`${attempt.label}: answered ${status}`);
      for (const hostile of attempt.hostile) {
        if (text.includes(hostile)) {
          failures.push(`${attempt.label}: echoed in ${text.slice(0, 300)}`);
        }
      }
    }
    assert.deepEqual(failures, [], `${failures.length} of ${count} attempts`);
    assert.ok(count > 100, `only ${count} attempts`);
    // The session those attempts carried is still live: none of them logged it out.
    const list = await app.fetch("/api/secrets", { headers: bearer(creator.accessToken) });
    assert.equal(list.status, 200);
  },

  async "an unknown field is named as unexpected, without its name, beside the route's own fields"(
    app,
  ) {
    const key = pasted();
    const response = await app.fetch("/api/auth/nonce", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ [key]: 1 }),
    });
    assert.equal(response.status, 400);
    const { error } = await response.json();
    assert.equal(error.code, "invalid_request");
    assert.equal(error.message, "unexpected field.");
  },

  async "a Chain ID the service does not list is not repeated by the contract-wallet refusal"(app) {
    // Signed by another key, so the proof goes the contract-wallet way, for a chain with no RPC.
    const [creator, signer] = [newWallet(), newWallet()];
    const nonce = await (await app.fetch("/api/auth/nonce", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    })).json();
    const pastedNumber = 4929123456789012;
    const message = buildSiweMessage({
      domain: nonce.domain,
      uri: nonce.uri,
      chainId: pastedNumber,
      nonce: nonce.nonce,
      issuedAt: new Date(nonce.issuedAt),
      expirationTime: new Date(nonce.expiresAt),
      statement: nonce.statement,
      address: creator.address,
    });
    const response = await app.fetch("/api/auth/wallet-proof", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ message, signature: await signer.signMessage({ message }) }),
    });
    assert.equal(response.status, 401);
    const text = await response.text();
    assert.equal(JSON.parse(text).error.code, "signature_mismatch");
    assert.ok(!text.includes(String(pastedNumber)), text);
  },

  async "a secret type, checked against the service's own list, may be named"(app) {
    const creator = await signIn(app);
    const response = await app.fetch("/api/secrets", {
      method: "DELETE",
      headers: bearer(creator.accessToken, { "content-type": "application/json" }),
      body: JSON.stringify({ secretType: "provider_b_key" }),
    });
    assert.equal(response.status, 404);
    const { error } = await response.json();
    assert.equal(error.code, "secret_not_found");
    assert.match(error.message, /provider_b_key/);
  },
});
