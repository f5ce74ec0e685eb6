/**
 * The settings page end to end in headless Chromium (Debian's /usr/bin/chromium driven by
 * playwright-core; no browser is ever downloaded). The local app listens on a real port; each
 * browser context gets an EIP-1193 wallet injected into its pages that signs, in this Deno process,
 * with a real private key. Without Chromium the test is skipped, except under CI=true where that is
 * a failure.
 */
import assert from "node:assert/strict";
import type { Browser, BrowserContext, Page } from "playwright-core";
import type { PrivateKeyAccount } from "viem/accounts";
import { atEdge } from "../server/app.ts";
import { bearer, newWallet, signIn, startTestApp, type TestApp } from "./support/app.ts";
import { launchChromium, openPage, screenshot, skipWithoutChromium } from "./support/chromium.ts";
import { type InjectedWallet, injectWallet } from "./support/injected-wallet.ts";

// ---------------------------------------------------------------------------------------------
// The app on two real ports: the page's origin, and a second origin standing in for an API on
// another host (a deployed frontend calling the Supabase function URLs).

interface Served {
  readonly app: TestApp;
  readonly origin: string;
  readonly otherOrigin: string;
  /** Every request that reached the server: method and path. */
  readonly requests: { method: string; path: string }[];
  close(): Promise<void>;
}

const NONCES_PER_MINUTE = 100;

async function serveApp(): Promise<Served> {
  let edge: Deno.ServeHandler<Deno.NetAddr> = () => new Response(null, { status: 503 });
  const requests: { method: string; path: string }[] = [];
  const listen = () =>
    Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request, info) => {
      requests.push({ method: request.method, path: new URL(request.url).pathname });
      return edge(request, info);
    });
  const pageServer = listen();
  const otherServer = listen();
  const origin = `http://127.0.0.1:${pageServer.addr.port}`;
  // Sign-in messages are bound to the configured origins, and CORS lets in only these.
  // A nonce limit the last step reaches; the sign-ins before it take a few nonces each.
  const app = await startTestApp("pglite", {
    ALLOWED_ORIGINS: origin,
    RATE_LIMIT_NONCE_PER_MINUTE: String(NONCES_PER_MINUTE),
  });
  edge = atEdge(app.app.handler, app.config.clientIp);
  return {
    app,
    origin,
    otherOrigin: `http://127.0.0.1:${otherServer.addr.port}`,
    requests,
    async close() {
      await pageServer.shutdown();
      await otherServer.shutdown();
      await app.close();
    },
  };
}

interface Session {
  readonly context: BrowserContext;
  readonly page: Page;
  readonly wallet: InjectedWallet;
  /** Bodies of every response the context's pages received. */
  responseBodies(): Promise<string[]>;
  readonly pageErrors: string[];
}

async function openWalletContext(
  browser: Browser,
  account: PrivateKeyAccount,
  options: { bypassCSP?: boolean; rejectSignatures?: boolean } = {},
): Promise<Session> {
  const context = await browser.newContext({ bypassCSP: options.bypassCSP ?? false });
  // Lower case, as MetaMask returns it: the service must checksum it itself.
  const wallet = await injectWallet(context, account, {
    lowerCase: true,
    rejectSignatures: options.rejectSignatures,
  });
  const bodies: Promise<string>[] = [];
  context.on("response", (response) => {
    bodies.push(response.text().catch(() => ""));
  });
  const { page, pageErrors } = await openPage(context);
  return { context, page, wallet, responseBodies: () => Promise.all(bodies), pageErrors };
}

async function openSettings(page: Page, origin: string): Promise<void> {
  await page.goto(`${origin}/settings`);
  await page.locator('#wallet[data-ready="true"]').waitFor();
}

function shortAddress(address: string): string {
  return `${address.slice(0, 6)}…${address.slice(-4)}`;
}

async function expectStatus(page: Page, text: string): Promise<void> {
  await page.locator("#status", { hasText: text }).waitFor();
}

async function saveKey(page: Page, secretType: string, value: string, how: "click" | "enter") {
  const field = page.getByLabel(`New value for ${secretType}`);
  await field.fill(value);
  if (how === "enter") await field.press("Enter");
  else {await page.getByRole("button", { name: new RegExp(`^(Save|Replace) ${secretType}$`) })
      .click();}
}

function entry(page: Page, secretType: string) {
  return page.locator(`li.secret[data-secret-type="${secretType}"]`);
}

async function storedSession(page: Page): Promise<{ accessToken: string } | null> {
  const text = await page.evaluate(() => {
    const key = Object.keys(localStorage).find((k) => k.startsWith("wallet-vault.session:"));
    return key === undefined ? null : localStorage.getItem(key);
  });
  return text === null ? null : JSON.parse(text);
}

/** Everything the page holds: its markup, every field's current value, and localStorage. */
function pageContents(page: Page): Promise<string> {
  // A string, evaluated in the page: this file is type-checked without the DOM library.
  return page.evaluate<string>(`[
    document.documentElement.outerHTML,
    ...Array.from(document.querySelectorAll("input"), (input) => input.value),
    JSON.stringify({ ...localStorage }),
  ].join("\\n")`);
}

/** No value, nor any 12-character piece of one, appears in `text`. */
function assertNoSecretIn(text: string, values: readonly string[], where: string): void {
  for (const value of values) {
    for (let i = 0; i + 12 <= value.length; i++) {
      assert.ok(!text.includes(value.slice(i, i + 12)), `part of a secret value found in ${where}`);
    }
  }
}

function randomKey(prefix: string): string {
  return `${prefix}-${crypto.randomUUID()}-${crypto.randomUUID()}`;
}

// ---------------------------------------------------------------------------------------------

Deno.test({
  name: "the settings page in headless Chromium, with a wallet that really signs",
  ignore: skipWithoutChromium("tests/browser_test.ts"),
  // PGlite and the HTTP servers keep timers and sockets between steps by design.
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const served = await serveApp();
    const browser = await launchChromium();
    const { origin, otherOrigin, app } = served;
    const first = await openWalletContext(browser, newWallet());
    const { page } = first;
    const values = {
      first: randomKey("sk-a-first"),
      replacement: randomKey("sk-a-replacement"),
      llm: randomKey("sk-e"),
    };
    const allValues = Object.values(values);

    try {
      await t.step("a creator connects the wallet and signs in", async () => {
        await openSettings(page, origin);
        assert.equal(await page.locator("#wallet").getAttribute("data-state"), "signed-out");
        await page.getByRole("button", { name: "Connect wallet" }).click();
        await expectStatus(page, "Signed in as");
        const address = first.wallet.account.address;
        assert.equal(await page.locator("#address").textContent(), shortAddress(address));
        assert.equal(await page.locator("#address").getAttribute("title"), address);
        // The wallet was asked to sign an EIP-4361 message bound to this page's origin.
        assert.equal(first.wallet.signed.length, 1);
        const [message] = first.wallet.signed;
        assert.ok(message.startsWith(`${new URL(origin).host} wants you to sign in`));
        assert.ok(message.includes(`\n${address}\n`));
        assert.ok(message.includes(`URI: ${origin}\n`));
      });

      await t.step(
        "shows the seven secret types with their purposes from the registry",
        async () => {
          const registry = await (await app.fetch("/settings/registry.json")).json();
          assert.equal(registry.secretTypes.length, 7);
          for (const { secretType, purpose } of registry.secretTypes) {
            await entry(page, secretType).getByText(purpose).waitFor();
            assert.equal(await entry(page, secretType).getAttribute("data-saved"), "false");
          }
        },
      );

      await t.step("saves two keys, replaces one and deletes one", async () => {
        await saveKey(page, "provider_a_api_key", values.first, "click");
        await expectStatus(page, "Saved provider_a_api_key.");
        await saveKey(page, "provider_e_key", values.llm, "enter"); // keyboard only
        await expectStatus(page, "Saved provider_e_key.");
        for (const type of ["provider_a_api_key", "provider_e_key"]) {
          assert.equal(await entry(page, type).getAttribute("data-saved"), "true");
          assert.equal(await page.getByLabel(`New value for ${type}`).inputValue(), "");
          await entry(page, type).locator("time").waitFor();
        }
        assertNoSecretIn(await pageContents(page), allValues, "the page after saving");
        await screenshot(page, "settings-two-keys-saved");

        await saveKey(page, "provider_a_api_key", values.replacement, "click");
        await expectStatus(page, "Replaced provider_a_api_key.");
        assert.equal(await page.getByLabel("New value for provider_a_api_key").inputValue(), "");

        await page.getByRole("button", { name: "Delete provider_e_key" }).click();
        await expectStatus(page, "Deleted provider_e_key.");
        assert.equal(await entry(page, "provider_e_key").getAttribute("data-saved"), "false");
        assert.equal(await entry(page, "provider_a_api_key").getAttribute("data-saved"), "true");

        // Readiness: provider A still lacks its org id; nothing enables LLM steps any more.
        const providerA = page.locator('tr[data-provider="provider_a"]');
        assert.equal(await providerA.getAttribute("data-ready"), "false");
        assert.match((await providerA.textContent()) ?? "", /Missing\s*provider_a_org_id/);
        assert.equal(
          await page.locator('li[data-step="llm"]').getAttribute("data-enabled"),
          "false",
        );

        // The service agrees: exactly one entry.
        const session = await storedSession(page);
        assert.ok(session);
        const listed = await (await app.fetch("/api/secrets", {
          headers: bearer(session.accessToken),
        })).json();
        assert.deepEqual(
          listed.secrets.map((s: { secretType: string }) => s.secretType),
          ["provider_a_api_key"],
        );
        // And the live-run side (session + server token) reads the replacement, not the first value.
        const revealed = await (await app.fetch("/api/secrets/reveal", {
          method: "POST",
          headers: bearer(session.accessToken, {
            "content-type": "application/json",
            "x-service-server-secret": app.config.serverRevealToken,
          }),
          body: JSON.stringify({ secretTypes: ["provider_a_api_key"] }),
        })).json();
        assert.equal(revealed.secrets[0].value, values.replacement);
        await screenshot(page, "settings-signed-in");
      });

      await t.step("the session survives a reload", async () => {
        await page.reload();
        await page.locator('#wallet[data-ready="true"]').waitFor();
        assert.equal(await page.locator("#wallet").getAttribute("data-state"), "signed-in");
        assert.equal(
          await page.locator("#address").textContent(),
          shortAddress(first.wallet.account.address),
        );
        assert.equal(await entry(page, "provider_a_api_key").getAttribute("data-saved"), "true");
        assert.equal(first.wallet.signed.length, 1, "no new signature was needed");
      });

      await t.step(
        "no secret value is in the DOM, localStorage or any response the page received",
        async () => {
          assertNoSecretIn(await pageContents(page), allValues, "the page");
          const bodies = await first.responseBodies();
          assert.ok(bodies.some((body) => body.includes('"provider_a_api_key"')));
          assertNoSecretIn(bodies.join("\n"), allValues, "a response body");
        },
      );

      await t.step("the page cannot call reveal: CORS refuses the server header", async () => {
        const session = await storedSession(page);
        assert.ok(session);
        // A page on another origin than the API, as a deployed frontend is; CSP is bypassed so the
        // browser's CORS check, not the page's own connect-src, is what is tested.
        const probe = await openWalletContext(browser, newWallet(), { bypassCSP: true });
        try {
          await openSettings(probe.page, origin);
          const outcome = await probe.page.evaluate(
            async ({ api, token, revealToken }) => {
              const attempt = async (path: string, init: RequestInit) => {
                try {
                  const response = await fetch(`${api}${path}`, init);
                  await response.text();
                  return { reached: true, status: response.status };
                } catch (error) {
                  return { reached: false, error: String(error) };
                }
              };
              const authorization = `Bearer ${token}`;
              return {
                list: await attempt("/secrets", { headers: { authorization } }),
                reveal: await attempt("/secrets/reveal", {
                  method: "POST",
                  headers: {
                    authorization,
                    "content-type": "application/json",
                    "x-service-server-secret": revealToken,
                  },
                  body: JSON.stringify({ secretTypes: ["provider_a_api_key"] }),
                }),
              };
            },
            {
              api: `${otherOrigin}/api`,
              token: session.accessToken,
              // Even with the real server token in hand, the browser will not send it.
              revealToken: app.config.serverRevealToken,
            },
          );
          assert.deepEqual(outcome.list, { reached: true, status: 200 });
          assert.equal(outcome.reveal.reached, false, JSON.stringify(outcome.reveal));
          assert.match(outcome.reveal.error ?? "", /TypeError|Failed to fetch/);
          const revealRequests = served.requests.filter((r) => r.path.endsWith("/reveal"));
          assert.ok(revealRequests.length > 0, "the preflight reached the server");
          assert.deepEqual(new Set(revealRequests.map((r) => r.method)), new Set(["OPTIONS"]));
        } finally {
          await probe.context.close();
        }
      });

      await t.step(
        "a second wallet in another browser sees none of the first's entries",
        async () => {
          const second = await openWalletContext(browser, newWallet());
          try {
            await openSettings(second.page, origin);
            await second.page.getByRole("button", { name: "Connect wallet" }).click();
            await expectStatus(second.page, "Signed in as");
            assert.equal(
              await second.page.locator("#address").textContent(),
              shortAddress(second.wallet.account.address),
            );
            assert.equal(await second.page.locator('li.secret[data-saved="true"]').count(), 0);
            assert.equal(await second.page.locator('tr[data-ready="true"]').count(), 0);
            const bodies = await second.responseBodies();
            const lists = bodies.flatMap((body) => {
              try {
                const parsed = JSON.parse(body);
                return Array.isArray(parsed?.secrets) ? [parsed] : [];
              } catch {
                return []; // the page, its scripts and styles
              }
            });
            assert.ok(lists.length > 0);
            for (const list of lists) assert.deepEqual(list.secrets, []);
            assertNoSecretIn(bodies.join("\n"), allValues, "the second wallet's responses");

            // Its own key makes provider B ready, which enables image and video steps.
            await saveKey(second.page, "provider_b_key", randomKey("sk-b"), "click");
            await expectStatus(second.page, "Saved provider_b_key.");
            const providerB = second.page.locator('tr[data-provider="provider_b"]');
            assert.equal(await providerB.getAttribute("data-ready"), "true");
            assert.match((await providerB.textContent()) ?? "", /Ready/);
            for (
              const [step, enabled] of [["image", "true"], ["video", "true"], ["llm", "false"]]
            ) {
              assert.equal(
                await second.page.locator(`li[data-step="${step}"]`).getAttribute("data-enabled"),
                enabled,
                step,
              );
            }
            await screenshot(second.page, "settings-second-wallet");
          } finally {
            await second.context.close();
          }
        },
      );

      await t.step("a wallet that refuses to sign shows the signature-rejected state", async () => {
        const refusing = await openWalletContext(browser, newWallet(), { rejectSignatures: true });
        try {
          await openSettings(refusing.page, origin);
          await refusing.page.getByRole("button", { name: "Connect wallet" }).click();
          await expectStatus(refusing.page, "Signature rejected");
          assert.equal(
            await refusing.page.locator("#wallet").getAttribute("data-state"),
            "signature-rejected",
          );
          assert.ok(
            await refusing.page.getByRole("button", { name: "Connect wallet" }).isVisible(),
          );
          assert.equal(await storedSession(refusing.page), null);
          assert.deepEqual(refusing.pageErrors, []);
          await screenshot(refusing.page, "settings-signature-rejected");
        } finally {
          await refusing.context.close();
        }
      });

      await t.step(
        "signing out forgets the session here and revokes it on the server",
        async () => {
          const session = await storedSession(page);
          assert.ok(session);
          await page.getByRole("button", { name: "Sign out", exact: true }).click();
          await expectStatus(page, "Signed out.");
          assert.equal(await page.locator("#wallet").getAttribute("data-state"), "signed-out");
          assert.equal(await storedSession(page), null);
          const after = await app.fetch("/api/secrets", { headers: bearer(session.accessToken) });
          assert.equal(after.status, 401);
          assert.equal((await after.json()).error.code, "session_revoked");
          await page.reload();
          await page.locator('#wallet[data-ready="true"]').waitFor();
          assert.equal(await page.locator("#wallet").getAttribute("data-state"), "signed-out");
          assert.deepEqual(first.pageErrors, []);
        },
      );

      await t.step(
        "another tab follows a sign-in and a sign-out, and drops what was typed before",
        async () => {
          const tab = await first.context.newPage();
          try {
            await openSettings(tab, origin);
            assert.equal(await tab.locator("#wallet").getAttribute("data-state"), "signed-out");
            await page.getByRole("button", { name: "Connect wallet" }).click();
            await expectStatus(page, "Signed in as");
            // The other tab hears of it (the storage event): its card and list are the creator's.
            await tab.locator('#wallet[data-state="signed-in"]').waitFor();
            assert.equal(
              await tab.locator("#address").textContent(),
              shortAddress(first.wallet.account.address),
            );
            await tab.locator('li.secret[data-secret-type="provider_a_api_key"][data-saved="true"]')
              .waitFor();
            const typed = tab.getByLabel("New value for provider_c_key");
            await typed.fill(randomKey("sk-c-typed-for-this-creator"));
            await page.getByRole("button", { name: "Sign out", exact: true }).click();
            await expectStatus(page, "Signed out.");
            // Signed out there too, and nothing typed is left to be saved for whoever comes next.
            await tab.locator('#wallet[data-state="signed-out"]').waitFor();
            assert.equal(await typed.inputValue(), "");
            assert.equal(await tab.locator('li.secret[data-saved="true"]').count(), 0);
            assert.deepEqual(first.pageErrors, []);
          } finally {
            await tab.close();
          }
        },
      );

      await t.step(
        "signing out everywhere ends the wallet's sessions on every device, and no one else's",
        async () => {
          await page.getByRole("button", { name: "Connect wallet" }).click();
          await expectStatus(page, "Signed in as");
          const here = await storedSession(page);
          assert.ok(here);
          // The same wallet on another device (another browser profile), and another creator.
          const device = await openWalletContext(browser, first.wallet.account);
          try {
            await openSettings(device.page, origin);
            await device.page.getByRole("button", { name: "Connect wallet" }).click();
            await expectStatus(device.page, "Signed in as");
            const there = await storedSession(device.page);
            assert.ok(there);
            const stranger = await signIn(app);

            await screenshot(page, "settings-sign-out-everywhere");
            await page.getByRole("button", { name: "Sign out everywhere" }).click();
            await expectStatus(page, "Signed out on every device.");
            assert.equal(await page.locator("#wallet").getAttribute("data-state"), "signed-out");
            assert.equal(await storedSession(page), null);
            for (const session of [here, there]) {
              const after = await app.fetch("/api/secrets", {
                headers: bearer(session.accessToken),
              });
              assert.equal(after.status, 401);
              assert.equal((await after.json()).error.code, "session_revoked");
            }
            // The other device finds out on its next call, and shows it is signed out.
            await device.page.reload();
            await device.page.locator('#wallet[data-ready="true"]').waitFor();
            await expectStatus(device.page, "Your session has ended");
            assert.equal(
              await device.page.locator("#wallet").getAttribute("data-state"),
              "signed-out",
            );
            assert.equal(await storedSession(device.page), null);
            const strangers = await app.fetch("/api/secrets", {
              headers: bearer(stranger.accessToken),
            });
            assert.equal(strangers.status, 200);
            assert.deepEqual(first.pageErrors, []);
            assert.deepEqual(device.pageErrors, []);
          } finally {
            await device.context.close();
          }
        },
      );

      // Last: it spends this address's nonce budget.
      await t.step("a page on another origin can read Retry-After when rate-limited", async () => {
        const probe = await openWalletContext(browser, newWallet(), { bypassCSP: true });
        try {
          await openSettings(probe.page, origin);
          const limited = await probe.page.evaluate(async ({ url, tries }) => {
            for (let i = 0; i < tries; i++) {
              const response = await fetch(url, {
                method: "POST",
                headers: { "content-type": "application/json" },
                body: "{}",
              });
              const body = await response.json();
              if (response.status === 429) {
                return {
                  header: response.headers.get("retry-after"),
                  inBody: body.error.retryAfterSeconds,
                };
              }
            }
            return null;
          }, { url: `${otherOrigin}/api/auth/nonce`, tries: 2.5 * NONCES_PER_MINUTE });
          assert.ok(limited, "the nonce limit was never reached");
          // Without Access-Control-Expose-Headers the browser hides it (null) from the page.
          assert.ok(limited.header !== null, "the browser hid Retry-After from the page");
          assert.ok(Number(limited.header) >= 1);
          assert.ok(Math.abs(Number(limited.header) - limited.inBody) <= 1);
        } finally {
          await probe.context.close();
        }
      });
    } finally {
      await browser.close();
      await served.close();
    }
  },
});
