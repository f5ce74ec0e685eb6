/**
 * The local server serves the settings page and the browser client: listed files only, types
 * stripped from the TypeScript, imports pointing at served URLs, the registry generated from the
 * service's own, and strict headers on the page.
 */
import assert from "node:assert/strict";
import { SECRET_TYPE_INFO, SECRET_TYPES } from "../protocol/secret-types.ts";
import { STATIC_ASSETS } from "../server/static.ts";
import { describeWithDatabase } from "./support/suite.ts";

const IMPORT_SPECIFIER = /\b(?:from|import)\s*["']([^"']+)["']/g;

describeWithDatabase("the settings page and browser client assets", {
  async "every listed asset is served with its content type and strict headers"(app) {
    for (const path of Object.keys(STATIC_ASSETS)) {
      const response = await app.fetch(path);
      assert.equal(response.status, 200, path);
      const type = response.headers.get("content-type") ?? "";
      const expected = path === "/settings"
        ? "text/html"
        : path.endsWith(".js")
        ? "text/javascript"
        : path.endsWith(".css")
        ? "text/css"
        : "application/json";
      assert.ok(type.startsWith(expected), `${path}: ${type}`);
      assert.equal(response.headers.get("x-content-type-options"), "nosniff");
      assert.match(response.headers.get("content-security-policy") ?? "", /script-src 'self'/);
      assert.match(response.headers.get("content-security-policy") ?? "", /connect-src 'self'/);
      await response.body?.cancel();
    }
  },

  async "the client modules are plain JavaScript whose imports are all served"(app) {
    for (const [path, asset] of Object.entries(STATIC_ASSETS)) {
      if (asset.kind !== "typescript") continue;
      const code = await (await app.fetch(path)).text();
      assert.doesNotMatch(code, /\bimport\s+type\b|\binterface\s+\w+\s*\{/, path);
      for (const [, specifier] of code.matchAll(IMPORT_SPECIFIER)) {
        assert.ok(Object.hasOwn(STATIC_ASSETS, specifier), `${path} imports ${specifier}`);
      }
    }
    const client = await (await app.fetch("/client/vault-client.js")).text();
    assert.match(client, /export function createVaultClient\(options\s*\)/);
    assert.match(client, /from "\/client\/eip1193\.js"/);
  },

  async "the registry is the service's own: seven types in spec order with their purposes"(app) {
    const registry = await (await app.fetch("/settings/registry.json")).json();
    assert.deepEqual(
      registry.secretTypes.map((t: { secretType: string }) => t.secretType),
      SECRET_TYPES,
    );
    for (const entry of registry.secretTypes) {
      assert.equal(
        entry.purpose,
        SECRET_TYPE_INFO[entry.secretType as keyof typeof SECRET_TYPE_INFO].purpose,
      );
    }
    assert.deepEqual(
      registry.providers.find((p: { id: string }) => p.id === "provider_a").requires,
      ["provider_a_api_key", "provider_a_org_id"],
    );
  },

  async "nothing else is served: no source files, no traversal"(app) {
    for (
      const path of [
        "/client/vault-client.ts",
        "/settings/app.ts",
        "/client/settings.html",
        "/client/",
        "/settings/..%2f..%2fdeno.json",
        "/client/%2e%2e/deno.json",
        "/settings/../.local/dev-keys.json",
        "/client//etc/passwd",
        "/deno.json",
      ]
    ) {
      const response = await app.fetch(path);
      assert.equal(response.status, 404, path);
      assert.equal((await response.json()).error.code, "not_found");
    }
  },

  async "only GET and HEAD are answered"(app) {
    const head = await app.fetch("/settings", { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), "");
    const post = await app.fetch("/settings", { method: "POST" });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get("allow"), "GET, HEAD");
    await post.body?.cancel();
  },
});
