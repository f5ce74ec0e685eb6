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
import { launchChromium, openPage, skipWithoutChromium } from "./support/chromium.ts";
import { injectWallet } from "./support/injected-wallet.ts";
import { startLocalServer } from "./support/local-server.ts";
import { isStaticPath, serveStatic } from "../server/static.ts";

/**
 * A frontend's dev server: its page, which calls the API at `api`, and the browser client's
 * modules from sdk/src/ (the files the local server serves, types stripped).
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
  ignore: skipWithoutChromium("tests/local_origins_browser_test.ts"),
  // The server process's pipes and the page servers are closed in the finally block.
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const browser = await launchChromium();
    const dir = await Deno.makeTempDir({ prefix: "local-origins-" });
    const server = await startLocalServer({
      PGLITE_DATA_DIR: `${dir}/pglite`,
      DEV_KEYS_FILE: `${dir}/dev-keys.json`,
    });
    assert.match(server.output, /\(development\)/);
    const pageServers: Deno.HttpServer<Deno.NetAddr>[] = [];
    try {
      // Two dev servers, as a team runs them: localhost (Vite's default) and 127.0.0.1.
      for (const host of ["localhost", "127.0.0.1"]) {
        const pageServer = servePage(`http://127.0.0.1:${server.port}/api`);
        pageServers.push(pageServer);
        const origin = `http://${host}:${pageServer.addr.port}`;
        await t.step(`a page at ${host} on its own port signs in and saves a key`, async () => {
          const context = await browser.newContext();
          try {
            const wallet = await injectWallet(context, newWallet());
            const { page, pageErrors } = await openPage(context);
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
