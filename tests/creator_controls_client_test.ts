/**
 * The browser client's creator controls (sdk/src/creator-controls.ts, as `vault.controls`) against
 * the real service in-process, on both engines, with real signatures from viem accounts: the
 * activity a page at a time, "last used" on the list, the live-run lock and its unlock with a fresh
 * signature, the sessions and signing them out, export, and deleting the account. A live run is the
 * server client (sdk/src/server.ts) with the app's reveal token.
 */
import assert from "node:assert/strict";
import type { PrivateKeyAccount } from "viem/accounts";
import {
  createVaultClient,
  type Eip1193Provider,
  memoryStorage,
  SignatureRejectedError,
  type VaultClient,
} from "../sdk/src/browser.ts";
import { createVaultServerClient } from "../sdk/src/server.ts";
import { bearer, newWallet, signIn, type TestApp } from "./support/app.ts";
import { describeWithDatabase } from "./support/suite.ts";
import { rejects } from "./support/vault-error.ts";

const BASE = "http://127.0.0.1:54321/api";

/** An EIP-1193 wallet over a viem account; what it was asked to sign, as text. */
function wallet(account: PrivateKeyAccount = newWallet(), options: { reject?: boolean } = {}) {
  const signed: string[] = [];
  const provider: Eip1193Provider = {
    async request({ method, params }) {
      const list = (params ?? []) as readonly unknown[];
      switch (method) {
        case "eth_requestAccounts":
          return [account.address.toLowerCase()];
        case "eth_chainId":
          return "0x1";
        case "personal_sign": {
          if (options.reject) {
            throw Object.assign(new Error("User rejected the request."), { code: 4001 });
          }
          const raw = list[0] as `0x${string}`;
          signed.push(new TextDecoder().decode(hexBytes(raw)));
          return await account.signMessage({ message: { raw } });
        }
        default:
          throw Object.assign(new Error("unsupported"), { code: 4200 });
      }
    },
  };
  return { account, provider, signed };
}

function hexBytes(hex: `0x${string}`): Uint8Array {
  return Uint8Array.from(hex.slice(2).match(/../g) ?? [], (byte) => parseInt(byte, 16));
}

/**
 * A browser client over the in-process app; every request's method and path (with its query) is
 * kept, and `answer` may rewrite a JSON answer on its way to the client.
 */
function clientFor(
  app: TestApp,
  options: { answer?: (path: string, body: Record<string, unknown>) => unknown } = {},
) {
  const requests: string[] = [];
  const client = createVaultClient({
    baseUrl: BASE,
    storage: memoryStorage(),
    fetch: async (input, init) => {
      const url = new URL(String(input));
      requests.push(`${init?.method ?? "GET"} ${url.pathname}${url.search}`);
      const response = await app.fetch(url.href, init);
      if (options.answer === undefined || !response.ok) return response;
      const body = await response.json();
      return Response.json(options.answer(url.pathname, body), { status: response.status });
    },
  });
  return { client, requests };
}

/** A creator signed in through the client with `signer`'s wallet. */
async function signedIn(app: TestApp, signer = wallet()) {
  const { client, requests } = clientFor(app);
  const session = await client.signIn(signer.provider);
  return { client, requests, session, signer };
}

function liveRun(app: TestApp) {
  return createVaultServerClient({
    baseUrl: BASE,
    revealToken: app.config.serverRevealToken,
    fetch: (input, init) => app.fetch(String(input), init),
  });
}

const sessionIdOf = (token: string): string =>
  JSON.parse(atob(token.split(".")[1].replaceAll("-", "+").replaceAll("_", "/"))).session_id;

async function accessOf(app: TestApp, token: string): Promise<string | null> {
  const response = await app.fetch("/api/secrets", { headers: bearer(token) });
  const body = await response.json();
  return response.status === 200 ? null : body.error.code;
}

async function save(client: VaultClient, secretType: "provider_b_key" | "provider_e_key") {
  const value = `sk-${secretType}-${crypto.randomUUID()}`;
  await client.saveSecret(secretType, value);
  return value;
}

describeWithDatabase("the browser client's creator controls", {
  async "the list says when a live run last used each key, and the activity pages back with its cursor"(
    app,
  ) {
    const { client, requests, session } = await signedIn(app);
    await save(client, "provider_e_key");
    await save(client, "provider_b_key");
    await save(client, "provider_b_key");
    const before = await client.listSecrets();
    assert.deepEqual(before.secrets.map((s) => s.lastUsedAt), [null, null]);

    await liveRun(app).reveal(session.accessToken, ["provider_e_key"]);
    const after = await client.listSecrets();
    const used = after.secrets.find((s) => s.secretType === "provider_e_key");
    const unused = after.secrets.find((s) => s.secretType === "provider_b_key");
    assert.ok(used?.lastUsedAt, "a revealed key has a last use");
    assert.ok(Date.parse(used.lastUsedAt) >= Date.parse(used.updatedAt));
    assert.equal(unused?.lastUsedAt, null);

    const first = await client.controls.activity({ limit: 2 });
    assert.deepEqual(
      first.events.map((e) => [e.kind, e.actor, e.secretTypes]),
      [["revealed", "live_run", ["provider_e_key"]], ["replaced", "browser", ["provider_b_key"]]],
    );
    assert.ok(first.nextCursor);
    const second = await client.controls.activity({ limit: 2, cursor: first.nextCursor });
    assert.deepEqual(
      second.events.map((e) => [e.kind, e.secretTypes]),
      [["saved", ["provider_b_key"]], ["saved", ["provider_e_key"]]],
    );
    assert.equal(second.nextCursor, null);
    // Left out, the options are the service's defaults: the whole (short) trail, newest first.
    const all = await client.controls.activity();
    assert.deepEqual(all.events, [...first.events, ...second.events]);
    assert.deepEqual(
      requests.filter((r) => r.includes("/activity")),
      [
        "GET /api/secrets/activity?limit=2",
        `GET /api/secrets/activity?limit=2&cursor=${first.nextCursor}`,
        "GET /api/secrets/activity",
      ],
    );
  },

  async "a lock refuses live runs at once; unlocking asks the wallet to sign the unlock message"(
    app,
  ) {
    const { client, session, signer } = await signedIn(app);
    await save(client, "provider_b_key");
    assert.deepEqual(await client.controls.lockState(), { locked: false, lockedAt: null });

    const locked = await client.controls.lock();
    assert.equal(locked.locked, true);
    assert.ok(locked.lockedAt !== null && !Number.isNaN(Date.parse(locked.lockedAt)));
    assert.deepEqual(await client.controls.lockState(), locked);
    const refused = await rejects(liveRun(app).reveal(session.accessToken));
    assert.equal(refused.code, "vault_locked");
    assert.equal(refused.status, 423);
    // The browser still lists and saves while locked.
    await save(client, "provider_e_key");
    assert.equal((await client.listSecrets()).secrets.length, 2);

    const signaturesBefore = signer.signed.length;
    assert.deepEqual(await client.controls.unlock(signer.provider), { locked: false });
    assert.equal(signer.signed.length, signaturesBefore + 1);
    const [message] = signer.signed.slice(-1);
    assert.match(message, /\nUnlock live-run access to the keys in your .* vault\./);
    assert.ok(message.includes(`\n${session.user.walletAddress}\n`));
    assert.deepEqual(await client.controls.lockState(), { locked: false, lockedAt: null });
    const revealed = await liveRun(app).reveal(session.accessToken, ["provider_b_key"]);
    assert.deepEqual(revealed.secretTypes, ["provider_b_key"]);

    const kinds = (await client.controls.activity({ limit: 4 })).events.map((e) =>
      e.reason === undefined ? e.kind : `${e.kind}:${e.reason}`
    );
    assert.deepEqual(kinds, ["revealed", "unlocked", "saved", "reveal_refused:vault_locked"]);
  },

  async "a wallet kit's signMessage can sign instead of an EIP-1193 wallet"(app) {
    const { client, signer } = await signedIn(app);
    await client.controls.lock();
    const asked: string[] = [];
    const result = await client.controls.unlock(async (request) => {
      asked.push(request.purpose);
      return await signer.account.signMessage({ message: request.message });
    });
    assert.deepEqual(result, { locked: false });
    assert.deepEqual(asked, ["unlock"]);
  },

  async "declining in the wallet, or a signature over other text, leaves the vault locked"(app) {
    const account = newWallet();
    const { client } = await signedIn(app, wallet(account));
    await client.controls.lock();
    const declined = await rejects(
      client.controls.unlock(wallet(account, { reject: true }).provider),
    );
    assert.ok(declined instanceof SignatureRejectedError);
    assert.equal(declined.step, "sign");
    const forged = await rejects(
      client.controls.unlock(() => account.signMessage({ message: "something else" })),
    );
    assert.equal(forged.code, "signature_mismatch");
    assert.equal((await client.controls.lockState()).locked, true);
  },

  async "another wallet than the signed-in one is refused before a nonce is asked for"(app) {
    const { client, requests } = await signedIn(app);
    await client.controls.lock();
    const error = await rejects(client.controls.unlock(wallet().provider));
    assert.equal(error.code, "wallet_error");
    assert.match(error.message, /switch accounts/);
    assert.ok(!requests.some((r) => r.includes("/confirm/nonce")));
    assert.equal((await client.controls.lockState()).locked, true);
  },

  async "a message that does not match its nonce answer or the wallet is never signed"(app) {
    const signer = wallet();
    for (
      const tamper of [
        (message: string) => message.replace("\nChain ID: 1\n", "\nChain ID: 10\n"),
        (message: string) => message.replace(/\n0x[0-9a-fA-F]{40}\n/, `\n${newWallet().address}\n`),
      ]
    ) {
      const { client } = clientFor(app, {
        answer: (path, body) =>
          path.endsWith("/confirm/nonce")
            ? { ...body, message: tamper(body.message as string) }
            : body,
      });
      await client.signIn(signer.provider);
      await client.controls.lock();
      const signed = signer.signed.length;
      const error = await rejects(client.controls.unlock(signer.provider));
      assert.equal(error.code, "message_mismatch");
      assert.equal(signer.signed.length, signed, "the wallet was not asked");
    }
  },

  async "a sign-out message that lists other sessions than those chosen is never signed"(app) {
    const signer = wallet();
    const otherDevice = await signIn(app, signer.account);
    const chosen = sessionIdOf(otherDevice.accessToken);
    for (
      const tamper of [
        (message: string) => message.replace(chosen, crypto.randomUUID()),
        (message: string) => `${message}\n- urn:uuid:${crypto.randomUUID()}`,
        (message: string) => message.replace(/\nResources:\n.*$/s, ""),
      ]
    ) {
      const { client } = clientFor(app, {
        answer: (path, body) =>
          path.endsWith("/confirm/nonce")
            ? { ...body, message: tamper(body.message as string) }
            : body,
      });
      await client.signIn(signer.provider);
      const signed = signer.signed.length;
      const error = await rejects(client.controls.signOutSessions(signer.provider, [chosen]));
      assert.equal(error.code, "message_mismatch");
      assert.match(error.message, /resources/);
      assert.equal(signer.signed.length, signed, "the wallet was not asked");
    }
    assert.equal(await accessOf(app, otherDevice.accessToken), null);
  },

  async "the sessions list marks this one; signing another device out ends it there alone"(app) {
    const { client, session, signer } = await signedIn(app);
    const otherDevice = await signIn(app, signer.account);
    const stranger = await signIn(app);

    const { sessions } = await client.controls.listSessions();
    assert.deepEqual(
      sessions.map((s) => [s.id, s.current]).sort(),
      [[sessionIdOf(session.accessToken), true], [sessionIdOf(otherDevice.accessToken), false]]
        .sort(),
    );
    for (const listed of sessions) {
      assert.ok(Date.parse(listed.expiresAt) > Date.parse(listed.signedInAt));
      assert.equal(listed.lastRefreshedAt, null);
    }

    // Another creator's session is out of reach, and nothing ends.
    const foreign = await rejects(
      client.controls.signOutSessions(signer.provider, [sessionIdOf(stranger.accessToken)]),
    );
    assert.equal(foreign.code, "session_not_found");
    assert.equal(await accessOf(app, stranger.accessToken), null);

    const result = await client.controls.signOutSessions(signer.provider, [
      sessionIdOf(otherDevice.accessToken),
    ]);
    assert.deepEqual(result, { signedOut: 1 });
    assert.match(signer.signed.at(-1)!, /\nSign out the .* sessions you chose\./);
    assert.equal(await accessOf(app, otherDevice.accessToken), "session_revoked");
    assert.ok(await client.getSession(), "this session stays");
    assert.deepEqual(
      (await client.controls.listSessions()).sessions.map((s) => s.id),
      [sessionIdOf(session.accessToken)],
    );
  },

  async "signing this session out forgets it here"(app) {
    const { client, session, signer } = await signedIn(app);
    const heard: (string | null)[] = [];
    client.onSessionChange((changed) => heard.push(changed?.user.id ?? null));
    const result = await client.controls.signOutSessions(signer.provider, [
      sessionIdOf(session.accessToken).toUpperCase(),
    ]);
    assert.deepEqual(result, { signedOut: 1 });
    assert.equal(await client.getSession(), null);
    assert.deepEqual(heard, [null]);
    assert.equal(await accessOf(app, session.accessToken), "session_revoked");
  },

  async "the export holds the masked list, the lock and the activity, never a value"(app) {
    const { client, session } = await signedIn(app);
    const value = await save(client, "provider_b_key");
    await liveRun(app).reveal(session.accessToken);
    await client.controls.lock();
    const exported = await client.controls.exportAccount();
    assert.equal(exported.creator.id, session.user.id);
    assert.equal(exported.creator.walletAddress, session.user.walletAddress);
    assert.equal(exported.creator.chainId, null);
    assert.equal(exported.liveRunAccess.locked, true);
    assert.deepEqual(exported.secrets.map((s) => s.secretType), ["provider_b_key"]);
    assert.ok(exported.secrets[0].lastUsedAt);
    assert.deepEqual(exported.activity.map((e) => e.kind), ["locked", "revealed", "saved"]);
    assert.equal(exported.activityNextCursor, null);
    const text = JSON.stringify(exported);
    assert.ok(!text.includes(value.slice(-12)), "no part of the value");
    assert.ok(!text.includes(session.accessToken) && !text.includes(session.refreshToken));
  },

  async "deleting the account takes a signature, forgets the session, and the wallet comes back a new creator"(
    app,
  ) {
    const { client, session, signer } = await signedIn(app);
    await save(client, "provider_b_key");
    const otherDevice = await signIn(app, signer.account);

    assert.deepEqual(await client.controls.deleteAccount(signer.provider), { deleted: true });
    assert.match(signer.signed.at(-1)!, /\nDelete your .* account: every saved key/);
    assert.equal(await client.getSession(), null);
    for (const token of [session.accessToken, otherDevice.accessToken]) {
      assert.equal(await accessOf(app, token), "session_revoked");
    }
    const again = await client.signIn(signer.provider);
    assert.notEqual(again.user.id, session.user.id);
    assert.equal(again.user.walletAddress, session.user.walletAddress);
    assert.deepEqual((await client.listSecrets()).secrets, []);
    assert.deepEqual((await client.controls.activity()).events, []);
  },

  async "without a session every control is not_signed_in, and nothing is sent"(app) {
    const { client, requests } = clientFor(app);
    const { provider } = wallet();
    for (
      const call of [
        () => client.controls.activity(),
        () => client.controls.listSessions(),
        () => client.controls.lockState(),
        () => client.controls.lock(),
        () => client.controls.unlock(provider),
        () => client.controls.signOutSessions(provider, [crypto.randomUUID()]),
        () => client.controls.exportAccount(),
        () => client.controls.deleteAccount(provider),
      ]
    ) {
      assert.equal((await rejects(call())).code, "not_signed_in");
    }
    assert.deepEqual(requests, []);
  },
});
