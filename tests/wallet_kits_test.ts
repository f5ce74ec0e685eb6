/**
 * docs/frontends.md's React walkthrough, followed as a reader would: the app made by the pinned
 * create-vite's `react-ts` template, the page's own install lines run as written (the packed
 * tarball's path for `@wallet-vault/client`, as the page's note at its top says), the page's files
 * written where its blocks say (```lang package=<id> file=<path>; the template's other files
 * untouched), then the template's own `npm run build` (`tsc -b && vite build`), and in Chromium a
 * creator connects an injected wallet that signs with a real key, signs in through RainbowKit's
 * "Verify your account" step, saves a key through supabase-js and sees it masked, with no error in
 * the console and no request beyond loopback. The AppKit file is type-checked in the same app after
 * its own install line, with the adapters' kit-type assertions (tests/consumers/wallet-kits/).
 *
 * The blocks are found by their markers, so the page can change around them: `react-*` blocks are
 * the React page, in page order; `appkit*` the AppKit one. The app (about 1 GB installed) is kept
 * in .cache/walkthroughs/ and its install lines rerun each time (quick once installed); npm's own
 * cache serves a fresh clone. Without Chromium the browser step is skipped, except under CI=true
 * where that fails (as tests/browser_test.ts).
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
import { installLine, type PageBlock, pageBlocks } from "./support/walkthrough.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const PAGE = "docs/frontends.md";
/** Keep equal to .ci/run's warm-up and tests/package_test.ts. */
const CREATE_VITE = "create-vite@9.3.0";
const WORK = `${ROOT}.cache/walkthroughs/`;
const APP = `${WORK}react-ts/`;
const KIT_TYPES = `${ROOT}tests/consumers/wallet-kits/kit-types.ts`;

const BLOCKS = await pageBlocks(PAGE);
const REACT = BLOCKS.filter((block) => block.id.startsWith("react-"));
const APPKIT = BLOCKS.filter((block) => block.id === "appkit" || block.id.startsWith("appkit-"));

/** The install lines (```sh) and files (file=…) of a walkthrough, each in page order. */
function parts(blocks: readonly PageBlock[]) {
  const installs = blocks.filter((block) => block.lang === "sh");
  const files = blocks.filter((block) => block.file !== null);
  assert.ok(installs.length > 0, `${PAGE}: the walkthrough has no install line`);
  assert.deepEqual(
    blocks.filter((block) => !installs.includes(block) && !files.includes(block))
      .map((block) => `${PAGE}:${block.line}`),
    [],
    "each block of a walkthrough is an install line or a file",
  );
  return { installs, files };
}

Deno.test(`${PAGE}'s React page names in its .env every VITE_ variable its files read`, () => {
  const { files } = parts(REACT);
  const env = files.find((block) => block.file === ".env");
  assert.ok(env, `${PAGE}: the React page shows no .env`);
  const named = new Set([...env.code.matchAll(/^#?\s*(VITE_\w+)=/gm)].map((match) => match[1]));
  const read = new Set(
    files.flatMap((block) => [...block.code.matchAll(/import\.meta\.env\.(VITE_\w+)/g)])
      .map((match) => match[1]),
  );
  assert.ok(read.size >= 3, `only ${[...read]} read`);
  assert.deepEqual([...read].filter((name) => !named.has(name)), []);
});

let prepared: Promise<string> | null = null;

/** The app as the page makes it (once per process; one process at a time uses the shared one). */
function app(): Promise<string> {
  prepared ??= prepare();
  return prepared;
}

async function prepare(): Promise<string> {
  await Deno.mkdir(WORK, { recursive: true });
  const lock = await Deno.open(`${WORK}react-ts.lock`, { create: true, write: true });
  await lock.lock(true);
  const scaffolded = await Deno.stat(`${APP}package.json`).then(() => true, () => false);
  if (!scaffolded) {
    await Deno.remove(APP, { recursive: true }).catch(() => {});
    await run(
      "npx",
      ["-y", CREATE_VITE, "react-ts", "--template", "react-ts", "--no-interactive"],
      WORK,
    );
  }
  const tarball = await packSdk();
  for (const { installs, files } of [parts(REACT), parts(APPKIT)]) {
    for (const block of installs) await installLine(block, APP, tarball);
    for (const block of files) await Deno.writeTextFile(`${APP}${block.file}`, block.code);
  }
  return APP;
}

// ---------------------------------------------------------------------------------------------

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

/**
 * A stand-in Ethereum node for VITE_RPC_URL: the chain's id and head, empty balances, and
 * contract calls (ENS lookups) reverted, so an account has no ENS name.
 */
async function standInNode(request: Request): Promise<Response> {
  const calls = await request.json();
  const answer = (call: { id: unknown; method: string }) => {
    const results: Record<string, string> = {
      eth_chainId: "0x1",
      net_version: "1",
      eth_blockNumber: "0x10",
      eth_getBalance: "0x0",
    };
    return call.method in results
      ? { jsonrpc: "2.0", id: call.id, result: results[call.method] }
      : { jsonrpc: "2.0", id: call.id, error: { code: 3, message: "execution reverted" } };
  };
  // A public node answers any origin, as the page's own would.
  return Response.json(Array.isArray(calls) ? calls.map(answer) : answer(calls), {
    headers: { "access-control-allow-origin": "*" },
  });
}

Deno.test({
  name:
    `${PAGE}'s React page, in create-vite's react-ts template with the page's install line, builds with the template's npm run build, and in Chromium a creator signs in through RainbowKit and saves a key shown masked`,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    // Two loopback origins: the API (the local app, and the stand-in node) and the page.
    let api: Deno.ServeHandler<Deno.NetAddr> = () => new Response(null, { status: 503 });
    const functionCalls: { method: string; path: string; authorization: string | null }[] = [];
    await using apiServer = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      (request, info) => {
        const path = new URL(request.url).pathname;
        if (path === "/rpc" && request.method === "POST") return standInNode(request);
        if (path === "/rpc" && request.method === "OPTIONS") {
          return new Response(null, {
            status: 204,
            headers: {
              "access-control-allow-origin": "*",
              "access-control-allow-headers": "content-type",
              "access-control-allow-methods": "POST",
            },
          });
        }
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
    const local = await startTestApp("pglite", { ALLOWED_ORIGINS: pageOrigin });
    api = atEdge(local.app.handler, local.config.clientIp);

    try {
      const dir = await app();
      await t.step("the template's npm run build (tsc -b && vite build) passes", async () => {
        const outDir = await Deno.makeTempDir({ prefix: "wallet-kits-page-" });
        try {
          // The page's .env, its URLs those of this test's servers (as a deployment sets its own):
          // Vite lets the environment's VITE_ variables win over .env.
          await run("npm", ["run", "build", "--", "--outDir", outDir, "--emptyOutDir"], dir, {
            VITE_VAULT_API: `${apiOrigin}/api`,
            VITE_SUPABASE_URL: apiOrigin,
            VITE_SUPABASE_ANON_KEY: LOCAL_ANON_KEY,
            VITE_RPC_URL: `${apiOrigin}/rpc`,
          });
          page = await readBuild(outDir);
          assert.ok(page.has("/index.html"));
        } finally {
          await Deno.remove(outDir, { recursive: true });
        }
      });

      await t.step(
        "the AppKit file, and the adapters assigned to the kits' own types, pass the template's tsc -b",
        async () => {
          const kitTypes = `${dir}src/kit-types.ts`;
          await Deno.copyFile(KIT_TYPES, kitTypes);
          try {
            await run(`${dir}node_modules/.bin/tsc`, ["-b"], dir);
          } finally {
            await Deno.remove(kitTypes);
          }
        },
      );

      await t.step({
        name:
          "in Chromium: connect, sign in through RainbowKit's Verify step, save a key, see it masked, no console error",
        ignore: skipWithoutChromium("tests/wallet_kits_test.ts: the browser step"),
        async fn() {
          requireChromium();
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
            // Loopback only: anything else (a WalletConnect relay, a public RPC) is refused and
            // noted.
            const elsewhere: string[] = [];
            await context.route("**/*", (route) => {
              const url = new URL(route.request().url());
              if (url.hostname === "127.0.0.1" || url.protocol === "data:") return route.continue();
              elsewhere.push(url.origin);
              return route.abort();
            });
            const { page: tab, pageErrors } = await openPage(context);
            const consoleErrors: string[] = [];
            tab.on("console", (message) => {
              if (message.type() === "error") consoleErrors.push(message.text());
            });

            await tab.goto(pageOrigin);
            await tab.getByRole("button", { name: "Connect Wallet" }).first().click();
            await tab.getByRole("button", { name: /Browser Wallet/ }).click();
            // RainbowKit's "Verify your account" step, whose message the vault's service built.
            await tab.getByText("Verify your account").waitFor();
            await tab.getByRole("button", { name: "Sign message" }).click();
            await tab.getByRole("button", { name: "Save key" }).waitFor();
            assert.equal(wallet.signed.length, 1);
            const [message] = wallet.signed;
            assert.ok(message.startsWith(`${new URL(pageOrigin).host} wants you to sign in`));
            assert.ok(message.includes(`\n${wallet.account.address}\n`));
            assert.ok(message.includes(`URI: ${pageOrigin}\n`));

            await tab.getByLabel("Key type").selectOption("provider_b_key");
            await tab.getByLabel("Key value").fill(value);
            await tab.getByRole("button", { name: "Save key" }).click();
            const shown = tab.locator('li[data-secret-type="provider_b_key"]');
            await shown.waitFor();
            assert.equal((await shown.textContent())?.trim(), `provider_b_key …${value.slice(-4)}`);
            assert.equal(await tab.getByLabel("Key value").inputValue(), "");
            const html = await tab.content();
            assert.ok(!html.includes(value.slice(0, 20)), "the page shows the value");
            await screenshot(tab, "wallet-kits-rainbowkit-saved");

            const stored = await tab.evaluate<string | null>(
              `localStorage.getItem(${JSON.stringify(`wallet-vault.session:${apiOrigin}/api`)})`,
            );
            assert.ok(stored !== null, "the vault's session is in localStorage");
            const { accessToken } = JSON.parse(stored);
            const listed = await local.fetch("/api/secrets", { headers: bearer(accessToken) });
            assert.deepEqual(
              (await listed.json()).secrets.map((s: { secretType: string }) => s.secretType),
              ["provider_b_key"],
            );
            // supabase-js sent the vault's token on each call, with no header written by the page.
            assert.deepEqual(functionCalls.map((c) => `${c.method} ${c.path}`), [
              "GET /functions/v1/user-secrets",
              "PUT /functions/v1/user-secrets",
              "GET /functions/v1/user-secrets",
            ]);
            for (const call of functionCalls) {
              assert.equal(call.authorization, `Bearer ${accessToken}`);
            }

            assert.deepEqual(consoleErrors, [], "the console shows an error");
            assert.deepEqual(elsewhere, [], "the page reached only loopback");
            assert.deepEqual(pageErrors, []);

            // A service error reaches the page as its code, through vaultErrorFrom.
            await tab.getByRole("button", { name: "Save key" }).click();
            const alert = tab.getByRole("alert");
            await alert.waitFor();
            assert.equal(await alert.getAttribute("data-code"), "invalid_value");
            await context.close();
          } finally {
            await browser.close();
          }
        },
      });
    } finally {
      await local.close();
    }
  },
});
