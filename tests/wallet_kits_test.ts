/**
 * docs/frontends.md's React walkthroughs, followed as a reader would: the app made by the pinned
 * create-vite's `react-ts` template, the page's own install lines run as written (the packed
 * tarball's path for `@wallet-vault/client`, as the page's note at its top says), the page's files
 * written where its blocks say (```lang package=<id> file=<path>; the template's other files
 * untouched), then the template's own `npm run build` (`tsc -b && vite build`), and in Chromium a
 * creator connects an injected wallet that signs with a real key, signs in through the kit's own
 * step, saves a key through supabase-js and sees it masked, with no error in the console. Two
 * kits, one app: RainbowKit's page (its "Verify your account" step; the page reaches only
 * loopback), then AppKit's, which replaces App.tsx and adds appkit.ts (its "Sign In" step; beyond
 * loopback the page reaches only Reown's cloud and two wallet SDKs' analytics, which the test
 * answers itself: tests/support/appkit-cloud.ts). The adapters' kit-type assertions
 * (tests/consumers/wallet-kits/) are type-checked in the AppKit build.
 *
 * The blocks are found by their markers, so the page can change around them: `react-*` blocks are
 * the React page, in page order; `appkit*` the AppKit one. The app (about 1 GB installed) is kept
 * in .cache/walkthroughs/ and its install lines rerun each time (quick once installed); npm's own
 * cache serves a fresh clone. Without Chromium the browser step is skipped, except under CI=true
 * where that fails (as tests/browser_test.ts).
 */
import assert from "node:assert/strict";
import type { BrowserContext, Page } from "playwright-core";
import { atEdge, LOCAL_ANON_KEY } from "../server/app.ts";
import { bearer, newWallet, startTestApp, type TestApp } from "./support/app.ts";
import {
  launchChromium,
  openPage,
  requireChromium,
  screenshot,
  skipWithoutChromium,
} from "./support/chromium.ts";
import { type InjectedWallet, injectWallet } from "./support/injected-wallet.ts";
import { packSdk, run } from "./support/packed-sdk.ts";
import { answerAppKitCloud } from "./support/appkit-cloud.ts";
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
  const files = [...parts(REACT).files, ...parts(APPKIT).files];
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

/**
 * The app as the page makes it, both walkthroughs' install lines run (once per process; one
 * process at a time uses the shared one).
 */
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
  for (const { installs } of [parts(REACT), parts(APPKIT)]) {
    for (const block of installs) await installLine(block, APP, tarball);
  }
  return APP;
}

/**
 * Writes a walkthrough's files into the app, in page order (a later block's file replaces an
 * earlier one's), after removing those only another walkthrough writes.
 */
async function writeFiles(dir: string, blocks: readonly PageBlock[]): Promise<void> {
  const own = new Set(blocks.map((block) => block.file));
  for (const { file } of parts([...REACT, ...APPKIT]).files) {
    if (!own.has(file)) await Deno.remove(`${dir}${file}`).catch(() => {});
  }
  for (const { file, code } of parts(blocks).files) await Deno.writeTextFile(`${dir}${file}`, code);
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

type RpcCall = { id: unknown; method: string };

/**
 * A stand-in Ethereum node: the chain's id and head, empty balances, and contract calls (ENS
 * lookups) reverted, so an account has no ENS name.
 */
function nodeAnswer(calls: RpcCall | RpcCall[]): unknown {
  const answer = (call: RpcCall) => {
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
  return Array.isArray(calls) ? calls.map(answer) : answer(calls);
}

/** Two loopback origins: the API (the local app, and the stand-in node at /rpc) and the page. */
interface Stage extends AsyncDisposable {
  readonly apiOrigin: string;
  readonly pageOrigin: string;
  readonly local: TestApp;
  /** The functions' calls (supabase-js's), with the Authorization they carried. */
  readonly functionCalls: { method: string; path: string; authorization: string | null }[];
  /** Serves a build's files at the page's origin. */
  show(page: Map<string, Uint8Array<ArrayBuffer>>): void;
}

async function openStage(): Promise<Stage> {
  const functionCalls: Stage["functionCalls"] = [];
  let api: Deno.ServeHandler<Deno.NetAddr> = () => new Response(null, { status: 503 });
  const apiServer = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request, info) => {
      const path = new URL(request.url).pathname;
      // A public node answers any origin, as the page's own would.
      if (path === "/rpc" && request.method === "POST") {
        return Response.json(nodeAnswer(await request.json()), {
          headers: { "access-control-allow-origin": "*" },
        });
      }
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
  const pageServer = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => {
      const path = new URL(request.url).pathname;
      const body = page.get(path === "/" ? "/index.html" : path);
      // HEAD as any static host answers it (the Coinbase Wallet SDK reads the page's headers so).
      if (!["GET", "HEAD"].includes(request.method) || body === undefined) {
        return new Response("not found", { status: 404 });
      }
      const type = CONTENT_TYPES[path === "/" ? "html" : path.split(".").pop()!];
      return new Response(request.method === "HEAD" ? null : body, {
        headers: { "content-type": type ?? "application/octet-stream" },
      });
    },
  );
  const apiOrigin = `http://127.0.0.1:${apiServer.addr.port}`;
  const pageOrigin = `http://127.0.0.1:${pageServer.addr.port}`;
  const shutdown = () => Promise.all([apiServer.shutdown(), pageServer.shutdown()]);
  const local = await startTestApp("pglite", { ALLOWED_ORIGINS: pageOrigin }).catch(
    async (error) => {
      await shutdown();
      throw error;
    },
  );
  api = atEdge(local.app.handler, local.config.clientIp);
  return {
    apiOrigin,
    pageOrigin,
    local,
    functionCalls,
    show(files) {
      page = files;
    },
    async [Symbol.asyncDispose]() {
      await local.close();
      await shutdown();
    },
  };
}

/**
 * Writes `blocks`' files into the app and runs the template's npm run build with the page's .env,
 * its URLs this test's servers' (as a deployment sets its own: Vite lets the environment's VITE_
 * variables win over .env); the stage then serves the build.
 */
async function buildPage(
  stage: Stage,
  blocks: readonly PageBlock[],
  beside: readonly { from: string; to: string }[] = [],
): Promise<void> {
  const dir = await app();
  await writeFiles(dir, blocks);
  const outDir = await Deno.makeTempDir({ prefix: "wallet-kits-page-" });
  try {
    for (const { from, to } of beside) await Deno.copyFile(from, `${dir}${to}`);
    await run("npm", ["run", "build", "--", "--outDir", outDir, "--emptyOutDir"], dir, {
      VITE_VAULT_API: `${stage.apiOrigin}/api`,
      VITE_SUPABASE_URL: stage.apiOrigin,
      VITE_SUPABASE_ANON_KEY: LOCAL_ANON_KEY,
      VITE_RPC_URL: `${stage.apiOrigin}/rpc`,
    });
    const page = await readBuild(outDir);
    assert.ok(page.has("/index.html"));
    stage.show(page);
  } finally {
    for (const { to } of beside) await Deno.remove(`${dir}${to}`).catch(() => {});
    await Deno.remove(outDir, { recursive: true });
  }
}

/** What a browser context's pages reached beyond loopback, and what the test answered itself. */
interface Network {
  readonly elsewhere: string[];
  readonly answered: string[];
}

/**
 * Lets the context reach loopback only: what AppKit asks of Reown's cloud answered by the test
 * (tests/support/appkit-cloud.ts) when `appKit` is set, anything else (a WalletConnect relay, a
 * public RPC) refused and noted.
 */
async function loopbackOnly(context: BrowserContext, appKit: boolean): Promise<Network> {
  const network: Network = { elsewhere: [], answered: [] };
  await context.route("**/*", async (route) => {
    const url = new URL(route.request().url());
    if (url.hostname === "127.0.0.1" || url.protocol === "data:") return route.continue();
    if (appKit && await answerAppKitCloud(route, nodeAnswer, network.answered)) return;
    network.elsewhere.push(`${route.request().method()} ${url.origin}${url.pathname}`);
    return route.abort();
  });
  await context.routeWebSocket(/.*/, (socket) => {
    network.elsewhere.push(`WebSocket ${new URL(socket.url()).origin}`);
    return socket.close();
  });
  return network;
}

/** The page's console errors, from now on. */
function consoleErrors(tab: Page): string[] {
  const errors: string[] = [];
  tab.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
  });
  return errors;
}

/** The message the wallet signed is the service's, for the page and the wallet's account. */
function assertSignedIn(wallet: InjectedWallet, pageOrigin: string): void {
  assert.equal(wallet.signed.length, 1);
  const [message] = wallet.signed;
  assert.ok(message.startsWith(`${new URL(pageOrigin).host} wants you to sign in`));
  assert.ok(message.includes(`\n${wallet.account.address}\n`));
  assert.ok(message.includes(`URI: ${pageOrigin}\n`));
}

/**
 * The signed-in page's KeyForm: a key saved through supabase-js with the vault's token is shown
 * masked and stored for that creator; the value is never on the page.
 */
async function saveKeyAndSeeItMasked(tab: Page, stage: Stage, value: string): Promise<void> {
  await tab.getByLabel("Key type").selectOption("provider_b_key");
  await tab.getByLabel("Key value").fill(value);
  await tab.getByRole("button", { name: "Save key" }).click();
  const shown = tab.locator('li[data-secret-type="provider_b_key"]');
  await shown.waitFor();
  assert.equal((await shown.textContent())?.trim(), `provider_b_key …${value.slice(-4)}`);
  assert.equal(await tab.getByLabel("Key value").inputValue(), "");
  const html = await tab.content();
  assert.ok(!html.includes(value.slice(0, 20)), "the page shows the value");

  const stored = await tab.evaluate<string | null>(
    `localStorage.getItem(${JSON.stringify(`wallet-vault.session:${stage.apiOrigin}/api`)})`,
  );
  assert.ok(stored !== null, "the vault's session is in localStorage");
  const { accessToken } = JSON.parse(stored);
  const listed = await stage.local.fetch("/api/secrets", { headers: bearer(accessToken) });
  assert.deepEqual(
    (await listed.json()).secrets.map((s: { secretType: string }) => s.secretType),
    ["provider_b_key"],
  );
  // supabase-js sent the vault's token on each call, with no header written by the page.
  assert.deepEqual(stage.functionCalls.map((c) => `${c.method} ${c.path}`), [
    "GET /functions/v1/user-secrets",
    "PUT /functions/v1/user-secrets",
    "GET /functions/v1/user-secrets",
  ]);
  for (const call of stage.functionCalls) {
    assert.equal(call.authorization, `Bearer ${accessToken}`);
  }
}

/** A service error reaches the page as its code, through vaultErrorFrom. */
async function assertServiceErrorShown(tab: Page): Promise<void> {
  await tab.getByRole("button", { name: "Save key" }).click();
  const alert = tab.getByRole("alert");
  await alert.waitFor();
  assert.equal(await alert.getAttribute("data-code"), "invalid_value");
}

const skipBrowser = skipWithoutChromium("tests/wallet_kits_test.ts: the browser steps");

Deno.test({
  name:
    `${PAGE}'s React page, in create-vite's react-ts template with the page's install line, builds with the template's npm run build, and in Chromium a creator signs in through RainbowKit and saves a key shown masked`,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    await using stage = await openStage();
    await t.step("the template's npm run build (tsc -b && vite build) passes", async () => {
      await buildPage(stage, REACT);
    });

    await t.step({
      name:
        "in Chromium: connect, sign in through RainbowKit's Verify step, save a key, see it masked, no console error",
      ignore: skipBrowser,
      async fn() {
        requireChromium();
        const browser = await launchChromium();
        try {
          const context = await browser.newContext();
          // window.ethereum alone, lower case, no account before the page asks: RainbowKit's
          // "Browser Wallet" as a creator's extension presents it.
          const wallet = await injectWallet(context, newWallet(), {
            lowerCase: true,
            connectFirst: true,
            announce: false,
          });
          const network = await loopbackOnly(context, false);
          const { page: tab, pageErrors } = await openPage(context);
          const errors = consoleErrors(tab);

          await tab.goto(stage.pageOrigin);
          await tab.getByRole("button", { name: "Connect Wallet" }).first().click();
          await tab.getByRole("button", { name: /Browser Wallet/ }).click();
          // RainbowKit's "Verify your account" step, whose message the vault's service built.
          await tab.getByText("Verify your account").waitFor();
          await tab.getByRole("button", { name: "Sign message" }).click();
          await tab.getByRole("button", { name: "Save key" }).waitFor();
          assertSignedIn(wallet, stage.pageOrigin);

          await saveKeyAndSeeItMasked(tab, stage, `sk-rainbowkit-${crypto.randomUUID()}`);
          await screenshot(tab, "wallet-kits-rainbowkit-saved");
          assert.deepEqual(errors, [], "the console shows an error");
          assert.deepEqual(network.elsewhere, [], "the page reached only loopback");
          assert.deepEqual(pageErrors, []);

          await assertServiceErrorShown(tab);
          await context.close();
        } finally {
          await browser.close();
        }
      },
    });
  },
});

Deno.test({
  name:
    `${PAGE}'s AppKit page, in the same app with its own install line and files, builds with the template's npm run build, and in Chromium a creator connects in AppKit's modal, signs in through its Sign In step and saves a key shown masked`,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    await using stage = await openStage();
    await t.step(
      "the template's npm run build (tsc -b && vite build) passes, with the adapters assigned to the kits' own types",
      async () => {
        // The React page's files, then AppKit's: its App.tsx replaces RainbowKit's.
        await buildPage(stage, [...REACT, ...APPKIT], [{
          from: KIT_TYPES,
          to: "src/kit-types.ts",
        }]);
      },
    );

    await t.step({
      name:
        "in Chromium: open AppKit's modal, connect the injected wallet, sign in through its Sign In step, save a key, see it masked, no console error",
      ignore: skipBrowser,
      async fn() {
        requireChromium();
        const browser = await launchChromium();
        try {
          const context = await browser.newContext();
          // An extension announced through EIP-6963, as AppKit lists browser wallets.
          const wallet = await injectWallet(context, newWallet(), {
            lowerCase: true,
            connectFirst: true,
          });
          const network = await loopbackOnly(context, true);
          const { page: tab, pageErrors } = await openPage(context);
          const errors = consoleErrors(tab);

          await tab.goto(stage.pageOrigin);
          await tab.getByRole("button", { name: "Connect Wallet" }).first().click();
          await tab.getByRole("button", { name: /Injected Test Wallet/ }).click();
          // AppKit's "Sign In" step (SIWX), whose message the vault's service built.
          await tab.getByRole("button", { name: "Sign", exact: true }).click();
          await tab.getByRole("button", { name: "Save key" }).waitFor();
          assertSignedIn(wallet, stage.pageOrigin);

          await saveKeyAndSeeItMasked(tab, stage, `sk-appkit-${crypto.randomUUID()}`);
          await screenshot(tab, "wallet-kits-appkit-saved");
          assert.deepEqual(errors, [], "the console shows an error");
          assert.deepEqual(network.elsewhere, [], "the page reached beyond what the test answers");
          assert.deepEqual(pageErrors, []);
          // AppKit ran on the project's settings and the chain as the test gave them.
          for (
            const asked of [
              "GET api.web3modal.org/appkit/v1/config",
              "POST rpc.walletconnect.org/v1/",
            ]
          ) {
            assert.ok(network.answered.includes(asked), `AppKit did not ask ${asked}`);
          }

          await assertServiceErrorShown(tab);
          await context.close();
        } finally {
          await browser.close();
        }
      },
    });
  },
});
