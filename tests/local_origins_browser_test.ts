/**
 * The local loop a frontend team runs: `deno task start` with nothing configured (no
 * ALLOWED_ORIGINS), and their page on a dev server of its own, on another port (here a tiny static
 * server that serves the browser client from source, as a Vite dev server would). In headless
 * Chromium, with a wallet that really signs, the page signs in across origins and the message its
 * wallet signs names the page, not the API. Without Chromium the test is skipped, except under
 * CI=true where that is a failure.
 */
import assert from "node:assert/strict";
import { newWallet } from "./support/app.ts";
import {
  CHROMIUM,
  CHROMIUM_ARGS,
  hasChromium,
  inCi,
  injectWallet,
  loadPlaywright,
} from "./support/injected-wallet.ts";
import { isStaticPath, serveStatic } from "../server/static.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const MAIN = new URL("../server/main.ts", import.meta.url).pathname;

/** Deno's basics, and nothing else of this process's environment (no DATABASE_URL, no APP_ENV). */
const INHERITED = Object.fromEntries(
  ["PATH", "HOME", "DENO_DIR", "XDG_CACHE_HOME"].flatMap((name) => {
    const value = Deno.env.get(name);
    return value === undefined ? [] : [[name, value]];
  }),
);

interface LocalServer {
  readonly api: string;
  stop(): Promise<void>;
}

/** `deno task start` in a fresh directory, on a port of its own; ready once migrations ran. */
async function startLocalServer(dir: string): Promise<LocalServer> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", MAIN],
    cwd: ROOT,
    env: {
      ...INHERITED,
      NO_COLOR: "1",
      PORT: "0",
      PGLITE_DATA_DIR: `${dir}/pglite`,
      DEV_KEYS_FILE: `${dir}/dev-keys.json`,
    },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let output = "";
  while (!/^migrations: .*$/m.test(output)) {
    const { done, value } = await reader.read();
    if (done) {
      await child.status;
      throw new Error(`the server exited before it was ready:\n${output}\n${await stderr}`);
    }
    output += value;
  }
  assert.match(output, /\(development\)/);
  const port = Number(/listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(output)?.[1]);
  assert.ok(port > 0, output);
  const draining = (async () => {
    while (!(await reader.read()).done) {
      // keep the pipe flowing
    }
  })();
  return {
    api: `http://127.0.0.1:${port}/api`,
    async stop() {
      child.kill("SIGTERM");
      const status = await child.status;
      await draining;
      await stderr;
      assert.equal(status.code, 0, `the server stopped with ${status.code}`);
    },
  };
}

/**
 * A frontend's dev server: its page, which calls the API at `api`, and the browser client's
 * modules from sdk/ (the files the local server serves, types stripped).
 */
function servePage(api: string): Deno.HttpServer<Deno.NetAddr> {
  const page = `<!doctype html>
<meta charset="utf-8">
<title>A frontend on its own dev server</title>
<script type="module">
  import { createVaultClient, memoryStorage } from "/client/vault-client.js";
  const client = createVaultClient({ baseUrl: ${JSON.stringify(api)}, storage: memoryStorage() });
  window.signInAndSave = async (value) => {
    const session = await client.signIn(window.ethereum);
    await client.saveSecret("provider_a_api_key", value);
    const { secrets } = await client.listSecrets();
    return { walletAddress: session.user.walletAddress, secrets };
  };
</script>`;
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const { pathname } = new URL(request.url);
    if (pathname === "/") {
      return new Response(page, { headers: { "content-type": "text/html; charset=utf-8" } });
    }
    if (pathname.startsWith("/client/") && isStaticPath(pathname)) return serveStatic(request);
    return new Response("not found", { status: 404 });
  });
}

Deno.test({
  name:
    "with nothing configured, a page on another port signs in from Chromium with a message naming the page",
  ignore: !hasChromium && !inCi,
  // The server process's pipes and the page servers are closed in the finally block.
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    if (!hasChromium) {
      throw new Error(`CI=true but ${CHROMIUM} is missing: apt-get install -y chromium`);
    }
    const dir = await Deno.makeTempDir({ prefix: "local-origins-" });
    const server = await startLocalServer(dir);
    const pageServers: Deno.HttpServer<Deno.NetAddr>[] = [];
    const { chromium } = await loadPlaywright();
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    try {
      // Two dev servers, as a team runs them: localhost (Vite's default) and 127.0.0.1.
      for (const host of ["localhost", "127.0.0.1"]) {
        const pageServer = servePage(server.api);
        pageServers.push(pageServer);
        const origin = `http://${host}:${pageServer.addr.port}`;
        await t.step(`a page at ${host} on its own port signs in and saves a key`, async () => {
          const context = await browser.newContext();
          try {
            const wallet = await injectWallet(context, newWallet());
            const page = await context.newPage();
            const pageErrors: string[] = [];
            page.on("pageerror", (error) => pageErrors.push(error.message));
            await page.goto(`${origin}/`);
            await page.waitForFunction(() => "signInAndSave" in window);
            const value = `sk-a-${crypto.randomUUID()}-${crypto.randomUUID()}`;
            const outcome = await page.evaluate(
              (value) =>
                (window as unknown as {
                  signInAndSave(value: string): Promise<{
                    walletAddress: string;
                    secrets: { secretType: string; hint: string }[];
                  }>;
                }).signInAndSave(value),
              value,
            );
            assert.deepEqual(pageErrors, []);
            assert.equal(outcome.walletAddress, wallet.account.address);
            assert.deepEqual(
              outcome.secrets.map((s) => [s.secretType, s.hint]),
              [["provider_a_api_key", `…${value.slice(-4)}`]],
            );
            // What a wallet compares with the page it is asked from: the message names the page.
            assert.equal(wallet.signed.length, 1);
            const [message] = wallet.signed;
            const pageHost = new URL(origin).host;
            assert.ok(message.startsWith(`${pageHost} wants you to sign in`), message);
            assert.ok(message.includes(`\nURI: ${origin}\n`), message);
          } finally {
            await context.close();
          }
        });
      }
    } finally {
      await browser.close();
      for (const pageServer of pageServers) await pageServer.shutdown();
      await server.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
