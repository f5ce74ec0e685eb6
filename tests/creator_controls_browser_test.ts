/**
 * The creator controls on the settings page, end to end in headless Chromium (Debian's
 * /usr/bin/chromium driven by playwright-core) with an injected EIP-1193 wallet that really signs:
 * a creator saves a key, a live run (the server client, sdk/src/server.ts, with the live-run
 * credential of a service named image-worker) reveals it, the page shows when it was last used and
 * the activity, naming the service that read which key, the creator locks
 * live-run access and the live run is refused, unlocks with a signature, signs another device
 * out with a signature, exports, deletes the account with a signature, and signs in again as a new
 * creator with an empty vault. Without Chromium the test is skipped, except under CI=true.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { atEdge } from "../server/app.ts";
import { createVaultServerClient } from "../sdk/src/server.ts";
import { bearer, newWallet, signIn, startTestApp } from "./support/app.ts";
import { launchChromium, openPage, screenshot, skipWithoutChromium } from "./support/chromium.ts";
import { injectWallet } from "./support/injected-wallet.ts";
import { rejects } from "./support/vault-error.ts";
import { addCredential } from "../server/live-run-credentials.ts";
import { SECRET_TYPES } from "../protocol/secret-types.ts";

interface StoredSession {
  readonly accessToken: string;
  readonly user: { readonly id: string; readonly walletAddress: string };
}

async function storedSession(page: Page): Promise<StoredSession | null> {
  const text = await page.evaluate(() => {
    const key = Object.keys(localStorage).find((k) => k.startsWith("wallet-vault.session:"));
    return key === undefined ? null : localStorage.getItem(key);
  });
  return text === null ? null : JSON.parse(text);
}

async function openSettings(page: Page, origin: string): Promise<void> {
  await page.goto(`${origin}/settings`);
  await page.locator('#wallet[data-ready="true"]').waitFor();
}

async function expectStatus(page: Page, text: string): Promise<void> {
  await page.locator("#status", { hasText: text }).waitFor();
}

/** The kinds of the activity list's items, top to bottom. */
function activityKinds(page: Page): Promise<string[]> {
  return page.locator("#activity-list > li").evaluateAll((items) =>
    items.map((item) => (item as unknown as { dataset: { kind: string } }).dataset.kind)
  );
}

Deno.test({
  name: "a creator walks through the controls on the settings page in headless Chromium",
  ignore: skipWithoutChromium("tests/creator_controls_browser_test.ts"),
  // PGlite and the HTTP server keep timers and sockets between steps by design.
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    let edge: Deno.ServeHandler<Deno.NetAddr> = () => new Response(null, { status: 503 });
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      (request, info) => edge(request, info),
    );
    const origin = `http://127.0.0.1:${server.addr.port}`;
    const app = await startTestApp("pglite", { ALLOWED_ORIGINS: origin });
    edge = atEdge(app.app.handler, app.config.clientIp);
    // One service's credential, made as the operator makes it (credentials:add).
    const { credential } = await addCredential(app.database.db, "image-worker", SECRET_TYPES, null);
    const liveRun = createVaultServerClient({ baseUrl: `${origin}/api`, revealToken: credential });
    const browser = await launchChromium();
    const context = await browser.newContext({ acceptDownloads: true });
    const wallet = await injectWallet(context, newWallet());
    const { page, pageErrors } = await openPage(context);
    const value = `sk-b-${crypto.randomUUID()}-${crypto.randomUUID()}`;
    const lockSwitch = page.getByRole("switch", { name: "Lock live-run access" });
    const keyMeta = page.locator('li.secret[data-secret-type="provider_b_key"] .meta');
    let token = "";

    try {
      await t.step("the creator signs in and saves a key on the page", async () => {
        await openSettings(page, origin);
        assert.ok(await page.locator("#live-run").isHidden(), "no controls before sign-in");
        await page.getByRole("button", { name: "Connect wallet" }).click();
        await expectStatus(page, "Signed in as");
        await page.getByLabel("New value for provider_b_key").fill(value);
        await page.getByRole("button", { name: "Save provider_b_key" }).click();
        await expectStatus(page, "Saved provider_b_key.");
        await keyMeta.getByText("never used by a live run").waitFor();
        await page.locator('#activity-list > li[data-kind="saved"]').waitFor();
        token = (await storedSession(page))!.accessToken;
      });

      await t.step(
        "a live run reveals it; the page shows when, and the activity says which service read it",
        async () => {
          const revealed = await liveRun.reveal(token, ["provider_b_key"]);
          assert.equal(revealed.get("provider_b_key"), value);
          const listed = await (await app.fetch("/api/secrets", { headers: bearer(token) })).json();
          const lastUsedAt = listed.secrets[0].lastUsedAt;
          assert.ok(lastUsedAt);
          await openSettings(page, origin);
          const lastUsed = keyMeta.locator(".last-used");
          await lastUsed.getByText("last used by image-worker").waitFor();
          assert.equal(listed.secrets[0].lastUsedBy, "image-worker");
          assert.equal(await lastUsed.locator("time").getAttribute("datetime"), lastUsedAt);
          await page.locator("#activity-list > li").first().waitFor();
          assert.deepEqual(await activityKinds(page), ["revealed", "saved"]);
          const newest = (await page.locator("#activity-list > li").first().textContent()) ?? "";
          assert.match(newest, /image-worker revealed provider_b_key · by a live run/);
          assert.equal(
            await page.locator("#activity-list > li").first().getAttribute("data-credential"),
            "image-worker",
          );
        },
      );

      await t.step("a lock refuses the live run at once; unlocking takes a signature", async () => {
        assert.equal(await lockSwitch.getAttribute("aria-checked"), "false");
        await page.getByText("A lock cannot recall keys a live run has already read").waitFor();
        assert.match(
          (await page.locator("#lock-hint").textContent()) ?? "",
          /rotate those keys at their provider/,
        );
        const signatures = wallet.signed.length;
        await lockSwitch.click();
        await expectStatus(page, "Live-run access locked");
        assert.equal(await lockSwitch.getAttribute("aria-checked"), "true");
        assert.equal(wallet.signed.length, signatures, "locking needs no signature");
        await page.locator("#lock-state", { hasText: "Locked since" }).waitFor();

        const refused = await rejects(liveRun.reveal(token, ["provider_b_key"]));
        assert.equal(refused.code, "vault_locked");

        await lockSwitch.click();
        await expectStatus(page, "Live-run access unlocked.");
        assert.equal(await lockSwitch.getAttribute("aria-checked"), "false");
        assert.equal(wallet.signed.length, signatures + 1);
        assert.match(wallet.signed.at(-1)!, /\nUnlock live-run access to the keys in your /);
        assert.deepEqual(
          (await activityKinds(page)).slice(0, 3),
          ["unlocked", "reveal_refused", "locked"],
        );
        assert.equal(
          (await liveRun.reveal(token, ["provider_b_key"])).get("provider_b_key"),
          value,
        );
      });

      await t.step("the activity reads older events a page at a time", async () => {
        // Twenty replacements make the trail longer than the page's first read.
        for (let i = 0; i < 20; i++) {
          const saved = await app.fetch("/api/secrets", {
            method: "PUT",
            headers: bearer(token, { "content-type": "application/json" }),
            body: JSON.stringify({ secretType: "provider_b_key", value: `${value}-${i}` }),
          });
          assert.equal(saved.status, 200);
          await saved.body?.cancel();
        }
        await openSettings(page, origin);
        const more = page.getByRole("button", { name: "Load more" });
        await more.waitFor();
        assert.equal((await activityKinds(page)).length, 20);
        await more.click();
        await expectStatus(page, "Loaded 6 older events.");
        const kinds = await activityKinds(page);
        assert.equal(kinds.length, 26);
        assert.deepEqual(kinds.slice(-6), [
          "revealed",
          "unlocked",
          "reveal_refused",
          "locked",
          "revealed",
          "saved",
        ]);
        assert.ok(await more.isHidden(), "no more to load");
      });

      await t.step("the creator signs the other device out, with a signature", async () => {
        const otherDevice = await signIn(app, wallet.account);
        await openSettings(page, origin);
        const sessions = page.locator("#session-list > li");
        await sessions.nth(1).waitFor();
        assert.equal(await sessions.count(), 2);
        const here = page.locator('#session-list > li[data-current="true"]');
        assert.match((await here.textContent()) ?? "", /This device · Mozilla\/5\.0/);
        const there = page.locator('#session-list > li[data-current="false"]');
        assert.match((await there.textContent()) ?? "", /did not describe itself/);
        await screenshot(page, "settings-creator-controls");

        const signatures = wallet.signed.length;
        await there.getByRole("button", { name: /^Sign out .*asks your wallet to sign/ }).click();
        await expectStatus(page, "Signed out that device.");
        assert.equal(wallet.signed.length, signatures + 1);
        assert.match(wallet.signed.at(-1)!, /\nSign out the .* sessions you chose\./);
        const after = await app.fetch("/api/secrets", { headers: bearer(otherDevice.accessToken) });
        assert.equal(after.status, 401);
        assert.equal((await after.json()).error.code, "session_revoked");
        await there.waitFor({ state: "detached" });
        assert.equal(await sessions.count(), 1);
        assert.equal(await page.locator("#wallet").getAttribute("data-state"), "signed-in");
      });

      await t.step("the creator exports a JSON file that holds no key", async () => {
        const [download] = await Promise.all([
          page.waitForEvent("download"),
          page.getByRole("button", { name: "Export my data" }).click(),
        ]);
        assert.match(
          download.suggestedFilename(),
          /^wallet-vault-export-0x[0-9a-fA-F]{8}-.*\.json$/,
        );
        const text = await Deno.readTextFile((await download.path())!);
        const exported = JSON.parse(text);
        const session = (await storedSession(page))!;
        assert.equal(exported.creator.id, session.user.id);
        assert.equal(exported.creator.walletAddress, wallet.account.address);
        assert.deepEqual(
          exported.secrets.map((s: { secretType: string }) => s.secretType),
          ["provider_b_key"],
        );
        assert.equal(exported.activity.length, 26);
        assert.ok(!text.includes(value.slice(0, 20)), "no part of a key");
        assert.ok(!text.includes(token));
        await expectStatus(page, "Exported");
      });

      await t.step(
        "the creator deletes the account with a signature and comes back new",
        async () => {
          const before = (await storedSession(page))!;
          const deleteStart = page.getByRole("button", { name: "Delete account…" });
          await deleteStart.click();
          assert.equal(await deleteStart.getAttribute("aria-expanded"), "true");
          const signatures = wallet.signed.length;
          await page.getByRole("button", { name: "Delete my account" }).click();
          await expectStatus(page, "Account deleted");
          assert.equal(wallet.signed.length, signatures + 1);
          assert.match(wallet.signed.at(-1)!, /\nDelete your .* account: every saved key/);
          assert.equal(await page.locator("#wallet").getAttribute("data-state"), "signed-out");
          assert.equal(await storedSession(page), null);
          assert.ok(await page.locator("#live-run").isHidden());
          const old = await app.fetch("/api/secrets", { headers: bearer(before.accessToken) });
          assert.equal(old.status, 401);
          await old.body?.cancel();

          await page.getByRole("button", { name: "Connect wallet" }).click();
          await expectStatus(page, "Signed in as");
          const after = (await storedSession(page))!;
          assert.notEqual(after.user.id, before.user.id);
          assert.equal(after.user.walletAddress, before.user.walletAddress);
          await page.locator("#activity-empty").waitFor();
          assert.equal(await page.locator('li.secret[data-saved="true"]').count(), 0);
          assert.deepEqual(await activityKinds(page), []);
          assert.equal(await page.locator("#session-list > li").count(), 1);
          assert.equal(await lockSwitch.getAttribute("aria-checked"), "false");
          assert.deepEqual(pageErrors, []);
        },
      );
    } finally {
      await browser.close();
      await server.shutdown();
      await app.close();
    }
  },
});
