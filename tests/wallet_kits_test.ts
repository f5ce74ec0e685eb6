/**
 * The wallet-kit adapters as an app gets them: the packed `@wallet-vault/client` installed into a
 * copy of tests/consumers/wallet-kits/ (its own dependencies from its committed lockfile: React,
 * wagmi 2, RainbowKit 2.2, Reown AppKit, supabase-js, Vite), with the docs/frontends.md examples
 * marked `package=wallet-kits-*` written in as the files they are, then
 * - `tsc` checks the adapters against the published kits' own types (and the AppKit example);
 * - the React page (the docs' App.tsx, vault.ts and keys.ts) is built with Vite, served on
 *   loopback beside the local app, and driven in Chromium: a creator connects an injected wallet
 *   that signs with a real key, signs in through RainbowKit's "Verify your account" step, and saves
 *   a key through supabase-js with the vault's access token.
 *
 * The install (about 900 MB) is kept in .cache/consumers/wallet-kits/ and redone only when the
 * lockfile changes; npm's own cache serves a fresh clone. Without Chromium the browser test is
 * skipped, except under CI=true where that fails (as tests/browser_test.ts).
 */
import assert from "node:assert/strict";
import { atEdge, LOCAL_ANON_KEY } from "../server/app.ts";
import { bearer, newWallet, startTestApp } from "./support/app.ts";
import {
  launchChromium,
  openPage,
  requireChromium,
  screenshot,
  skipWithoutChromium,
} from "./support/chromium.ts";
import { injectWallet } from "./support/injected-wallet.ts";
import { packSdk, run } from "./support/packed-sdk.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const CONSUMER = `${ROOT}tests/consumers/wallet-kits/`;
const WORK = `${ROOT}.cache/consumers/wallet-kits/`;
/** What the test copies from the consumer: everything but installs and builds. */
const SOURCES = [
  "package.json",
  "package-lock.json",
  "index.html",
  "vite.config.ts",
  "tsconfig.json",
];

// ---------------------------------------------------------------------------------------------
// The consumer project

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The docs/frontends.md examples this test runs: each block's id, and the file it is. */
const DOCS_EXAMPLES: Record<string, string> = {
  "wallet-kits-vault": "src/vault.ts",
  "wallet-kits-app": "src/App.tsx",
  "wallet-kits-supabase": "src/keys.ts",
  "wallet-kits-appkit": "src/appkit.ts",
};

/** The files the docs show (```lang package=<id> blocks), by path in the consumer. */
async function docsExamples(): Promise<Map<string, string>> {
  const lines = (await Deno.readTextFile(`${ROOT}docs/frontends.md`)).split("\n");
  const files = new Map<string, string>();
  for (let i = 0; i < lines.length; i++) {
    const id = lines[i].match(/^```\w+\s.*\bpackage=(wallet-kits-\S+)/)?.[1];
    if (id === undefined) continue;
    const end = lines.indexOf("```", i + 1);
    const file = DOCS_EXAMPLES[id];
    assert.ok(file !== undefined, `docs/frontends.md:${i + 1}: no file for package=${id}`);
    assert.ok(!files.has(file), `docs/frontends.md: two blocks for package=${id}`);
    files.set(file, lines.slice(i + 1, end).join("\n") + "\n");
    i = end;
  }
  assert.deepEqual([...files.keys()].sort(), Object.values(DOCS_EXAMPLES).sort());
  return files;
}

let prepared: Promise<string> | null = null;

/** The consumer with its locked dependencies and the packed package installed (once per process). */
function consumer(): Promise<string> {
  prepared ??= prepare();
  return prepared;
}

async function prepare(): Promise<string> {
  await Deno.mkdir(WORK, { recursive: true });
  // One process at a time uses the shared install; the lock is let go when the process ends.
  const lock = await Deno.open(`${ROOT}.cache/consumers/wallet-kits.lock`, {
    create: true,
    write: true,
  });
  await lock.lock(true);
  const manifests = await Promise.all(
    ["package.json", "package-lock.json"].map((f) => Deno.readTextFile(`${CONSUMER}${f}`)),
  );
  const wanted = await sha256(manifests.join("\0"));
  const installed = await Deno.readTextFile(`${WORK}.installed`).catch(() => null);
  for (const file of SOURCES) await Deno.copyFile(`${CONSUMER}${file}`, `${WORK}${file}`);
  await Deno.remove(`${WORK}src`, { recursive: true }).catch(() => {});
  await run("cp", ["-r", `${CONSUMER}src`, `${WORK}src`], ROOT);
  for (const [file, code] of await docsExamples()) await Deno.writeTextFile(`${WORK}${file}`, code);
  if (installed !== wanted) {
    await Deno.remove(`${WORK}.installed`).catch(() => {});
    await run("npm", ["ci", "--no-audit", "--no-fund", "--prefer-offline"], WORK);
    await Deno.writeTextFile(`${WORK}.installed`, wanted);
  }
  // As an app installs it: the tarball, beside the locked dependencies.
  await run(
    "npm",
    ["install", "--no-save", "--no-audit", "--no-fund", "--prefer-offline", await packSdk()],
    WORK,
  );
  return WORK;
}

// ---------------------------------------------------------------------------------------------

Deno.test({
  name:
    "the adapters from the packed package type-check against RainbowKit 2.2 with wagmi 2, and Reown AppKit",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await consumer();
    // src/kit-types.ts: each adapter assigned to the kit's own type, and refused for a wrong one;
    // src/appkit.ts: the docs' createAppKit call; the page's files with React, wagmi, RainbowKit.
    await run(`${dir}node_modules/.bin/tsc`, ["--noEmit", "-p", "tsconfig.json"], dir);
  },
});

// ---------------------------------------------------------------------------------------------
// The browser test

const CONTENT_TYPES: Record<string, string> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  svg: "image/svg+xml",
  png: "image/png",
};

/** The built page's files, by URL path. */
async function readBuild(dir: string, prefix = "/"): Promise<Map<string, Uint8Array<ArrayBuffer>>> {
  const files = new Map<string, Uint8Array<ArrayBuffer>>();
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) {
      for (const [p, b] of await readBuild(path, `${prefix}${entry.name}/`)) files.set(p, b);
    } else files.set(`${prefix}${entry.name}`, await Deno.readFile(path));
  }
  return files;
}

Deno.test({
  name:
    "in Chromium, a creator connects an injected wallet, signs in through RainbowKit's Verify step and saves a key through supabase-js",
  ignore: skipWithoutChromium("tests/wallet_kits_test.ts: the browser test"),
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    requireChromium();
    const dir = await consumer();

    // Two loopback origins: the API (the local app) and the page, as a deployed frontend has.
    let api: Deno.ServeHandler<Deno.NetAddr> = () => new Response(null, { status: 503 });
    const functionCalls: { method: string; path: string; authorization: string | null }[] = [];
    await using apiServer = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      (request, info) => {
        const path = new URL(request.url).pathname;
        if (path.startsWith("/functions/v1/") && request.method !== "OPTIONS") {
          functionCalls.push({
            method: request.method,
            path,
            authorization: request.headers.get("authorization"),
          });
        }
        return api(request, info);
      },
    );
    let page: Map<string, Uint8Array<ArrayBuffer>> = new Map();
    await using pageServer = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      (request) => {
        const path = new URL(request.url).pathname;
        const body = page.get(path === "/" ? "/index.html" : path);
        if (request.method !== "GET" || body === undefined) {
          return new Response("not found", { status: 404 });
        }
        const type = CONTENT_TYPES[path === "/" ? "html" : path.split(".").pop()!];
        return new Response(body, {
          headers: { "content-type": type ?? "application/octet-stream" },
        });
      },
    );
    const apiOrigin = `http://127.0.0.1:${apiServer.addr.port}`;
    const pageOrigin = `http://127.0.0.1:${pageServer.addr.port}`;
    const app = await startTestApp("pglite", { ALLOWED_ORIGINS: pageOrigin });
    api = atEdge(app.app.handler, app.config.clientIp);

    const outDir = await Deno.makeTempDir({ prefix: "wallet-kits-page-" });
    await run(`${dir}node_modules/.bin/vite`, ["build", "--outDir", outDir, "--emptyOutDir"], dir, {
      VITE_VAULT_API: `${apiOrigin}/api`,
      VITE_SUPABASE_URL: apiOrigin,
      VITE_SUPABASE_ANON_KEY: LOCAL_ANON_KEY,
    });
    page = await readBuild(outDir);
    await Deno.remove(outDir, { recursive: true });

    const browser = await launchChromium();
    const value = `sk-rainbowkit-${crypto.randomUUID()}`;
    try {
      const context = await browser.newContext();
      // window.ethereum alone, lower case, no account before the page asks: RainbowKit's
      // "Browser Wallet" as a creator's extension presents it.
      const wallet = await injectWallet(context, newWallet(), {
        lowerCase: true,
        connectFirst: true,
        announce: false,
      });
      // Loopback only: anything else (a WalletConnect relay, a public RPC) is refused and noted.
      const elsewhere: string[] = [];
      await context.route("**/*", (route) => {
        const url = new URL(route.request().url());
        if (url.hostname === "127.0.0.1" || url.protocol === "data:") return route.continue();
        elsewhere.push(url.origin);
        return route.abort();
      });
      const { page: tab, pageErrors } = await openPage(context);

      await t.step(
        "the creator connects the injected wallet and signs RainbowKit's message",
        async () => {
          await tab.goto(pageOrigin);
          await tab.getByRole("button", { name: "Connect Wallet" }).first().click();
          await tab.getByRole("button", { name: /Browser Wallet/ }).click();
          // RainbowKit's "Verify your account" step, whose message the vault's service built.
          await tab.getByText("Verify your account").waitFor();
          await tab.getByRole("button", { name: "Sign message" }).click();
          await tab.getByRole("button", { name: "Save key" }).waitFor();
          await screenshot(tab, "wallet-kits-rainbowkit-signed-in");
          assert.equal(wallet.signed.length, 1);
          const [message] = wallet.signed;
          const address = wallet.account.address;
          assert.ok(message.startsWith(`${new URL(pageOrigin).host} wants you to sign in`));
          assert.ok(message.includes(`\n${address}\n`));
          assert.ok(message.includes(`URI: ${pageOrigin}\n`));
          assert.ok(message.includes("\nChain ID: 1\n"));
        },
      );

      await t.step(
        "the key is saved through supabase-js and listed masked by the service",
        async () => {
          await tab.getByLabel("Key type").selectOption("provider_b_key");
          await tab.getByLabel("Key value").fill(value);
          await tab.getByRole("button", { name: "Save key" }).click();
          await tab.locator('li[data-secret-type="provider_b_key"]').waitFor();
          assert.equal(await tab.getByLabel("Key value").inputValue(), "");

          const stored = await tab.evaluate<string | null>(
            `localStorage.getItem(${JSON.stringify(`wallet-vault.session:${apiOrigin}/api`)})`,
          );
          assert.ok(stored !== null, "the vault's session is in localStorage");
          const { accessToken } = JSON.parse(stored);
          const listed = await app.fetch("/api/secrets", { headers: bearer(accessToken) });
          const text = await listed.text();
          assert.equal(listed.status, 200);
          assert.deepEqual(
            JSON.parse(text).secrets.map((s: { secretType: string }) => s.secretType),
            ["provider_b_key"],
          );
          assert.ok(!text.includes(value), "the service lists the key masked");
          // supabase-js sent the vault's token on each call, with no header written by the page.
          assert.deepEqual(
            functionCalls.map((c) => `${c.method} ${c.path}`),
            [
              "GET /functions/v1/user-secrets",
              "PUT /functions/v1/user-secrets",
              "GET /functions/v1/user-secrets",
            ],
          );
          for (const call of functionCalls) {
            assert.equal(call.authorization, `Bearer ${accessToken}`);
          }
        },
      );

      await t.step(
        "a service error reaches the page as its code, through vaultErrorFrom",
        async () => {
          await tab.getByLabel("Key value").fill("");
          await tab.getByRole("button", { name: "Save key" }).click();
          const alert = tab.getByRole("alert");
          await alert.waitFor();
          assert.equal(await alert.getAttribute("data-code"), "invalid_value");
          await screenshot(tab, "wallet-kits-rainbowkit-saved");
        },
      );

      assert.deepEqual(elsewhere, [], "the page reached only loopback");
      assert.deepEqual(pageErrors, []);
      await context.close();
    } finally {
      await browser.close();
      await app.close();
    }
  },
});
