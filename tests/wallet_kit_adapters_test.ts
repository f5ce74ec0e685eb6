/**
 * The wallet-kit sign-in adapters (sdk/src/rainbowkit.ts, sdk/src/appkit-siwx.ts) against the real
 * service in-process, called the way RainbowKit and AppKit call them, with a viem local account
 * signing what they are given. tests/wallet_kits_test.ts type-checks them against the published
 * kits and drives RainbowKit's own modal in Chromium.
 */
import assert from "node:assert/strict";
import type { PrivateKeyAccount } from "viem/accounts";
import { createSiweMessage } from "viem/siwe";
import { createVaultSiwx } from "../sdk/src/appkit-siwx.ts";
import { createVaultClient, memoryStorage, type VaultClient } from "../sdk/src/browser.ts";
import { vaultAuthenticationAdapter, watchAuthenticationStatus } from "../sdk/src/rainbowkit.ts";
import type { VaultError } from "../sdk/src/errors.ts";
import { bearer, newWallet, type TestApp } from "./support/app.ts";
import { describeWithDatabase } from "./support/suite.ts";
import { rejects } from "./support/vault-error.ts";

function clientFor(app: TestApp, paths: string[] = []): VaultClient {
  return createVaultClient({
    baseUrl: "http://127.0.0.1:54321/api",
    storage: memoryStorage(),
    fetch: (input, init) => {
      paths.push(new URL(String(input)).pathname);
      return app.fetch(String(input), init);
    },
  });
}

async function secretTypesOf(app: TestApp, accessToken: string): Promise<string[]> {
  const response = await app.fetch("/api/secrets", { headers: bearer(accessToken) });
  assert.equal(response.status, 200);
  const body = await response.json();
  return body.secrets.map((s: { secretType: string }) => s.secretType);
}

async function assertRevoked(app: TestApp, accessToken: string): Promise<void> {
  const response = await app.fetch("/api/secrets", { headers: bearer(accessToken) });
  assert.equal(response.status, 401);
  assert.equal((await response.json()).error.code, "session_revoked");
}

/** What RainbowKit's SignIn step does: nonce, message, the wallet's signature, verify. */
async function rainbowKitSignIn(
  adapter: ReturnType<typeof vaultAuthenticationAdapter>,
  account: PrivateKeyAccount,
  chainId = 1,
): Promise<{ message: string; verified: boolean }> {
  const nonce = await adapter.getNonce();
  const message = await adapter.createMessage({ nonce, address: account.address, chainId });
  const signature = await account.signMessage({ message });
  return { message, verified: await adapter.verify({ message, signature }) };
}

describeWithDatabase("the RainbowKit authentication adapter", {
  async "signs a creator in through getNonce, createMessage and verify, and the session saves a key"(
    app,
  ) {
    const client = clientFor(app);
    const account = newWallet();
    const statuses: string[] = [];
    const stop = watchAuthenticationStatus(client, (status) => statuses.push(status));
    await Promise.resolve();
    const adapter = vaultAuthenticationAdapter(client);

    const { verified } = await rainbowKitSignIn(adapter, account);
    assert.equal(verified, true);
    const session = await client.getSession();
    assert.ok(session !== null);
    assert.equal(session.user.walletAddress.toLowerCase(), account.address.toLowerCase());
    assert.deepEqual(statuses, ["loading", "unauthenticated", "authenticated"]);

    const value = `sk-rainbowkit-${crypto.randomUUID()}`;
    await client.saveSecret("provider_b_key", value);
    const listed = await client.listSecrets();
    assert.deepEqual(listed.secrets.map((s) => s.secretType), ["provider_b_key"]);
    assert.ok(!JSON.stringify(listed).includes(value), "the value is not sent back");
    assert.deepEqual(await secretTypesOf(app, session.accessToken), ["provider_b_key"]);

    await adapter.signOut();
    assert.equal(await client.getSession(), null);
    assert.equal(statuses.at(-1), "unauthenticated");
    await assertRevoked(app, session.accessToken);
    stop();
  },

  async "the message is the service's, for the address and chain RainbowKit passes, with a fresh nonce per try"(
    app,
  ) {
    const paths: string[] = [];
    const adapter = vaultAuthenticationAdapter(clientFor(app, paths));
    const account = newWallet();
    // RainbowKit hands over the address as wagmi has it; the service checksums it.
    const lowerCase = account.address.toLowerCase() as `0x${string}`;
    const nonce = await adapter.getNonce();
    assert.deepEqual(paths, [], "getNonce asks the service nothing");
    const first = await adapter.createMessage({ nonce, address: lowerCase, chainId: 10 });
    const second = await adapter.createMessage({ nonce, address: lowerCase, chainId: 10 });
    assert.deepEqual(paths, ["/api/auth/nonce", "/api/auth/nonce"]);
    assert.equal(first.split("\n")[1], account.address);
    assert.match(first, /^Chain ID: 10$/m);
    const nonceOf = (message: string) => message.match(/^Nonce: (.+)$/m)?.[1];
    assert.notEqual(nonceOf(first), nonceOf(second));
    // The service bound the nonce to this account: another wallet's proof cannot spend it.
    const other = newWallet();
    const stolen = first.replace(account.address, other.address);
    const signature = await other.signMessage({ message: stolen });
    const refused = await rejects(adapter.verify({ message: stolen, signature }));
    assert.equal(refused.code, "nonce_mismatch");
  },

  async "a proof the service refuses rejects verify with its code, told to onError, and stores nothing"(
    app,
  ) {
    const client = clientFor(app);
    const errors: VaultError[] = [];
    const adapter = vaultAuthenticationAdapter(client, { onError: (e) => errors.push(e) });
    const account = newWallet();
    const message = await adapter.createMessage({
      nonce: "x",
      address: account.address,
      chainId: 1,
    });
    const signature = await newWallet().signMessage({ message });
    const error = await rejects(adapter.verify({ message, signature }));
    assert.equal(error.status, 401);
    assert.deepEqual(errors, [error]);
    assert.equal(await client.getSession(), null);
  },
});

describeWithDatabase("the RainbowKit authentication adapter with a chain allow-list", {
  async "createMessage for a chain the service refuses rejects with chain_not_allowed"(app) {
    const errors: VaultError[] = [];
    const adapter = vaultAuthenticationAdapter(clientFor(app), { onError: (e) => errors.push(e) });
    const error = await rejects(
      adapter.createMessage({ nonce: "x", address: newWallet().address, chainId: 5 }),
    );
    assert.equal(error.code, "chain_not_allowed");
    assert.deepEqual(error.details, { allowedChainIds: [1] });
    assert.deepEqual(errors, [error]);
  },
}, { ALLOWED_CHAIN_IDS: "1" });

// ---------------------------------------------------------------------------------------------

/** What AppKit's SIWX step does: createMessage, the wallet signs toString(), addSession. */
async function appKitSignIn(
  siwx: ReturnType<typeof createVaultSiwx>,
  account: PrivateKeyAccount,
  chainId: `eip155:${number}` = "eip155:1",
) {
  const data = await siwx.createMessage({ accountAddress: account.address, chainId });
  const message = data.toString();
  const signature = await account.signMessage({ message });
  await siwx.addSession({ data, message, signature });
  return { data, message, signature };
}

describeWithDatabase("the Reown AppKit SIWX config", {
  async "signs a creator in through createMessage and addSession; getSessions finds it; the session saves a key"(
    app,
  ) {
    const client = clientFor(app);
    const siwx = createVaultSiwx(client, { storage: memoryStorage() });
    // AppKit's `required`: true unless the app lets the wallet stay connected unsigned.
    assert.equal(siwx.getRequired(), true);
    assert.equal(createVaultSiwx(client, { required: false }).getRequired(), false);
    const account = newWallet();
    const { data, message, signature } = await appKitSignIn(siwx, account);
    // The service's own EIP-4361 message, whose fields AppKit gets as data.
    assert.equal(
      message,
      createSiweMessage({
        domain: data.domain,
        address: account.address,
        statement: data.statement,
        uri: data.uri,
        version: "1",
        chainId: 1,
        nonce: data.nonce,
        issuedAt: new Date(data.issuedAt!),
        expirationTime: new Date(data.expirationTime!),
      }),
    );
    assert.equal(data.chainId, "eip155:1");

    const session = await client.getSession();
    assert.ok(session !== null);
    const sessions = await siwx.getSessions("eip155:1", account.address.toLowerCase());
    assert.equal(sessions.length, 1);
    assert.equal(sessions[0].message, message);
    assert.equal(sessions[0].signature, signature);
    assert.equal(sessions[0].data.nonce, data.nonce);
    assert.deepEqual(await siwx.getSessions("eip155:10", account.address), []);
    assert.deepEqual(await siwx.getSessions("eip155:1", newWallet().address), []);

    const value = `sk-appkit-${crypto.randomUUID()}`;
    await client.saveSecret("provider_c_key", value);
    assert.deepEqual(await secretTypesOf(app, session.accessToken), ["provider_c_key"]);

    await siwx.revokeSession("eip155:1", account.address);
    assert.equal(await client.getSession(), null);
    assert.deepEqual(await siwx.getSessions("eip155:1", account.address), []);
    await assertRevoked(app, session.accessToken);
  },

  async "a session the service refuses is not added, and nothing is stored"(app) {
    const client = clientFor(app);
    const storage = memoryStorage();
    const siwx = createVaultSiwx(client, { storage, storageKey: "siwx" });
    const account = newWallet();
    const data = await siwx.createMessage({ accountAddress: account.address, chainId: "eip155:1" });
    const message = data.toString();
    const signature = await newWallet().signMessage({ message });
    const error = await rejects(siwx.addSession({ data, message, signature }));
    assert.equal(error.status, 401);
    assert.equal(await client.getSession(), null);
    assert.equal(await storage.getItem("siwx"), null);
    assert.deepEqual(await siwx.getSessions("eip155:1", account.address), []);
  },

  async "an account of another chain namespace is refused before the service is asked"(app) {
    const paths: string[] = [];
    const siwx = createVaultSiwx(clientFor(app, paths), { storage: memoryStorage() });
    const error = await rejects(
      siwx.createMessage({
        accountAddress: "7S3P4HxJpyyigGzodYwHtCxZyUQe9JiBMHyRWXArAaKv",
        chainId: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
      }),
    );
    assert.equal(error.code, "chain_not_allowed");
    assert.equal(error.status, null);
    assert.deepEqual(paths, []);
  },

  async "setSessions([]) (AppKit's sign-out on disconnect) ends the session; setSessions adds the given ones"(
    app,
  ) {
    const client = clientFor(app);
    const siwx = createVaultSiwx(client, { storage: memoryStorage() });
    const account = newWallet();
    const data = await siwx.createMessage({ accountAddress: account.address, chainId: "eip155:1" });
    const message = data.toString();
    const signature = await account.signMessage({ message });
    await siwx.setSessions([{ data, message, signature }]);
    const session = await client.getSession();
    assert.ok(session !== null);
    assert.equal((await siwx.getSessions("eip155:1", account.address)).length, 1);

    await siwx.setSessions([]);
    assert.equal(await client.getSession(), null);
    assert.deepEqual(await siwx.getSessions("eip155:1", account.address), []);
    await assertRevoked(app, session.accessToken);
  },

  async "a creator signed in elsewhere since (another tab) is not reported as the AppKit session"(
    app,
  ) {
    const storage = memoryStorage();
    const client = createVaultClient({
      baseUrl: "http://127.0.0.1:54321/api",
      storage,
      fetch: (input, init) => app.fetch(String(input), init),
    });
    const siwxStorage = memoryStorage();
    const siwx = createVaultSiwx(client, { storage: siwxStorage });
    const first = newWallet();
    await appKitSignIn(siwx, first);
    // Another tab signs a second wallet in through the plain client, over the same storage.
    const second = newWallet();
    const other = createVaultClient({
      baseUrl: "http://127.0.0.1:54321/api",
      storage,
      fetch: (input, init) => app.fetch(String(input), init),
    });
    const message = (await other.signInMessage({ address: second.address, chainId: 1 })).message;
    await other.signInWithSignature({ message, signature: await second.signMessage({ message }) });
    assert.deepEqual(await siwx.getSessions("eip155:1", first.address), []);
    assert.deepEqual(await siwx.getSessions("eip155:1", second.address), []);
  },
});
