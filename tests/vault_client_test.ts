/**
 * The browser client (sdk/src/browser.ts) against the real service in-process: wallet
 * sign-in with real signatures, the session's storage, refresh and revocation, typed errors, and
 * EIP-6963 discovery. The same module runs in the browser test, served by the local server.
 */
import assert from "node:assert/strict";
import { hexToString } from "viem";
import { createSiweMessage } from "viem/siwe";
import type { PrivateKeyAccount } from "viem/accounts";
import {
  createVaultClient,
  discoverWallets,
  type Eip1193Provider,
  memoryStorage,
  SignatureRejectedError,
  type VaultClientOptions,
  type VaultStorage,
} from "../sdk/src/browser.ts";
import { type NonceResponse, signInMessageMismatch } from "../sdk/src/sign-in-message.ts";
import { serviceSigner } from "./support/session-signers.ts";
import { bearer, newWallet, type TestApp } from "./support/app.ts";
import { describeWithDatabase } from "./support/suite.ts";
import { rejects } from "./support/vault-error.ts";

interface WalletOptions {
  readonly account?: PrivateKeyAccount;
  readonly chainId?: number;
  readonly reject?: "connect" | "sign";
}

/** An EIP-1193 wallet over a viem account; records what it was asked. */
function wallet(options: WalletOptions = {}) {
  const account = options.account ?? newWallet();
  const calls: { method: string; params: readonly unknown[] }[] = [];
  const rejection = () => Object.assign(new Error("User rejected the request."), { code: 4001 });
  const provider: Eip1193Provider = {
    async request({ method, params }) {
      const list = (params ?? []) as readonly unknown[];
      calls.push({ method, params: list });
      switch (method) {
        case "eth_requestAccounts":
          if (options.reject === "connect") throw rejection();
          return [account.address.toLowerCase()];
        case "eth_chainId":
          return `0x${(options.chainId ?? 1).toString(16)}`;
        case "personal_sign": {
          if (options.reject === "sign") throw rejection();
          return await account.signMessage({ message: { raw: list[0] as `0x${string}` } });
        }
        default:
          throw Object.assign(new Error("unsupported"), { code: 4200 });
      }
    },
  };
  return { account, provider, calls };
}

interface Traffic {
  readonly paths: string[];
}

function clientFor(
  app: TestApp,
  options: Partial<VaultClientOptions> & { traffic?: Traffic } = {},
) {
  const storage = options.storage ?? memoryStorage();
  const client = createVaultClient({
    baseUrl: "http://127.0.0.1:54321/api/",
    storage,
    fetch: (input, init) => {
      const url = new URL(String(input));
      options.traffic?.paths.push(`${init?.method ?? "GET"} ${url.pathname}`);
      return app.fetch(url.href, init);
    },
    ...options,
  });
  return { client, storage };
}

async function stored(storage: VaultStorage): Promise<Record<string, unknown> | null> {
  const text = await storage.getItem("wallet-vault.session:http://127.0.0.1:54321/api");
  return text === null ? null : JSON.parse(text);
}

function sessionIdOf(accessToken: string): string {
  const payload = accessToken.split(".")[1].replaceAll("-", "+").replaceAll("_", "/");
  return JSON.parse(atob(payload)).session_id;
}

/**
 * A signed-in client an hour on (its access token due), whose first `lost` refresh answers
 * arrive only after it has given up on them (1 s, which the answer that is not lost must beat on a
 * busy machine): the service rotated all the same. Every refresh body it sent is kept, as a
 * body-logging proxy would keep it.
 */
async function withLostRefreshAnswers(app: TestApp, lost: number) {
  const { client: signer, storage } = clientFor(app);
  const signedIn = await signer.signIn(wallet().provider);
  const lostAnswers: string[] = [];
  const refreshBodies: string[] = [];
  const { client } = clientFor(app, {
    storage,
    timeoutMs: 1000,
    now: () => Date.now() + 3600_000,
    fetch: async (input, init) => {
      if (String(input).endsWith("/auth/refresh")) refreshBodies.push(String(init?.body));
      const answer = await app.fetch(String(input), init);
      if (String(input).endsWith("/auth/refresh") && lostAnswers.length < lost) {
        lostAnswers.push((await answer.clone().json()).refresh_token);
        await new Promise((_, reject) => {
          init?.signal?.addEventListener("abort", () => reject(init.signal!.reason));
        });
      }
      return answer;
    },
  });
  return { signedIn, client, lostAnswers, refreshBodies };
}

async function assertLive(app: TestApp, accessToken: string): Promise<void> {
  const response = await app.fetch("/api/secrets", { headers: bearer(accessToken) });
  assert.equal(response.status, 200, "the session is still live");
  await response.body?.cancel();
}

describeWithDatabase("the browser vault client", {
  async "signs in with any EIP-1193 wallet and stores the session"(app) {
    const { account, provider } = wallet();
    const { client, storage } = clientFor(app);
    const changes: unknown[] = [];
    client.onSessionChange((session) => changes.push(session));

    const session = await client.signIn(provider);
    assert.equal(session.user.walletAddress, account.address); // checksummed by the service
    assert.equal(typeof session.accessToken, "string");
    assert.deepEqual(await stored(storage), session);
    assert.deepEqual(await client.getSession(), session);
    assert.deepEqual(changes, [session]);

    const status = await client.listSecrets();
    assert.equal(status.project, "wallet-vault-test");
    assert.deepEqual(status.secrets, []);
  },

  async "asks the wallet to sign exactly the service's EIP-4361 message, as UTF-8 hex"(app) {
    const { account, provider, calls } = wallet();
    const { client } = clientFor(app);
    await client.signIn(provider);
    assert.deepEqual(calls.map((c) => c.method), [
      "eth_requestAccounts",
      "eth_chainId",
      "personal_sign",
    ]);
    const [data, address] = calls[2].params as [`0x${string}`, string];
    assert.equal(address.toLowerCase(), account.address.toLowerCase());
    const message = hexToString(data);
    assert.ok(message.startsWith("127.0.0.1:54321 wants you to sign in with your Ethereum"));
    assert.ok(message.includes(`\n${account.address}\n`));
    assert.ok(message.includes("\nURI: http://127.0.0.1:54321\n"));
  },

  async "a wallet that refuses to sign gives SignatureRejectedError and no session"(app) {
    const { provider } = wallet({ reject: "sign" });
    const { client, storage } = clientFor(app);
    const error = await rejects(client.signIn(provider));
    assert.ok(error instanceof SignatureRejectedError);
    assert.equal(error.code, "signature_rejected");
    assert.equal(error.step, "sign");
    assert.equal(await stored(storage), null);

    const refusingToConnect = await rejects(
      clientFor(app).client.signIn(
        wallet({ reject: "connect" }).provider,
      ),
    );
    assert.ok(refusingToConnect instanceof SignatureRejectedError);
    assert.equal(refusingToConnect.step, "connect");
  },

  async "a sign-in message that does not match the nonce answer is never shown to the wallet"(
    app,
  ) {
    const { provider, calls } = wallet();
    const { client } = createTampering(app);
    const error = await rejects(client.signIn(provider));
    assert.equal(error.code, "message_mismatch");
    assert.ok(!calls.some((c) => c.method === "personal_sign"));
  },

  async "refreshes the access token before it expires, once for concurrent calls"(app) {
    let clock = Date.now();
    const traffic: Traffic = { paths: [] };
    const { client, storage } = clientFor(app, { now: () => clock, traffic });
    const first = await client.signIn(wallet().provider);
    clock += (app.config.accessTokenTtlSeconds - 30) * 1000; // inside the 60 s margin

    traffic.paths.length = 0;
    await Promise.all([client.listSecrets(), client.listSecrets(), client.listSecrets()]);
    assert.equal(traffic.paths.filter((p) => p === "POST /api/auth/refresh").length, 1);
    const second = await client.getSession();
    assert.ok(second);
    assert.notEqual(second.refreshToken, first.refreshToken);
    assert.ok(second.expiresAt > first.expiresAt);
    assert.deepEqual(await stored(storage), second);

    // The service really rotated: the first refresh token is spent, and sent again by anyone
    // without the client's retry key, it is taken for a copy.
    const reuse = await app.fetch("/api/auth/refresh", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ refresh_token: first.refreshToken }),
    });
    assert.equal((await reuse.json()).error.code, "refresh_token_reused");
  },

  async "a refresh whose answer comes too late is sent again and keeps the session"(app) {
    const { signedIn, client, lostAnswers } = await withLostRefreshAnswers(app, 1);
    await client.listSecrets();
    const session = await client.getSession();
    assert.ok(session);
    // The retry was handed the very successor the lost answer carried: nothing was revoked.
    assert.equal(session.refreshToken, lostAnswers[0]);
    assert.notEqual(session.refreshToken, signedIn.refreshToken);
    await assertLive(app, signedIn.accessToken);
  },

  async "a refresh's first try sends only its key's hash: a copy of it gets nothing, the retry with the key keeps the session"(
    app,
  ) {
    const { signedIn, client, lostAnswers, refreshBodies } = await withLostRefreshAnswers(app, 1);
    await client.listSecrets();
    const [first, retry] = refreshBodies.map((body) => JSON.parse(body));
    assert.equal(refreshBodies.length, 2);
    assert.deepEqual(Object.keys(first).sort(), ["refresh_token", "retryKeyHash"]);
    assert.deepEqual(Object.keys(retry).sort(), ["refresh_token", "retryKey"]);
    assert.equal(retry.refresh_token, first.refresh_token);
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(retry.retryKey));
    assert.equal(
      first.retryKeyHash,
      btoa(String.fromCharCode(...new Uint8Array(digest))).replaceAll("+", "-")
        .replaceAll("/", "_").replace(/=+$/, ""),
    );
    assert.ok(
      !refreshBodies[0].includes(retry.retryKey),
      "the key never went out on the first try",
    );
    // Whoever logged the first request sends it again, verbatim: no successor, no harm done.
    const replay = await app.fetch("/api/auth/refresh", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: refreshBodies[0],
    });
    const replayed = await replay.text();
    assert.equal(replay.status, 409, replayed);
    assert.equal(JSON.parse(replayed).error.code, "refresh_replayed");
    assert.ok(!replayed.includes(lostAnswers[0]));
    const session = await client.getSession();
    assert.equal(session?.refreshToken, lostAnswers[0]);
    await assertLive(app, session!.accessToken);
    await assertLive(app, signedIn.accessToken);
  },

  async "a refresh whose two answers are both lost is recognised as a retry on the next call"(
    app,
  ) {
    const { signedIn, client, lostAnswers } = await withLostRefreshAnswers(app, 2);
    assert.equal((await rejects(client.listSecrets())).code, "timeout");
    // The key went into storage with the token, so the next refresh (any tab's) is recognised:
    // its first request, the key's hash, gets 409 refresh_replayed, and its retry the successor.
    assert.ok((await client.getSession())?.retryKey);
    await client.listSecrets();
    const session = await client.getSession();
    assert.equal(session?.refreshToken, lostAnswers[0]);
    assert.equal(lostAnswers[1], lostAnswers[0], "both lost answers carried the same successor");
    assert.equal(session?.retryKey, undefined, "the new token's refresh gets a key of its own");
    await assertLive(app, signedIn.accessToken);
  },

  async "a refresh after one that failed offline spends the token with the key's hash, which replayed gets nothing"(
    app,
  ) {
    const { client: signer, storage } = clientFor(app);
    await signer.signIn(wallet().provider);
    let online = false;
    // What reached the service, and how it answered: a logging proxy's view.
    const reached: { body: string; status: number }[] = [];
    const { client } = clientFor(app, {
      storage,
      now: () => Date.now() + 3600_000,
      fetch: async (input, init) => {
        if (!online) throw new TypeError("Failed to fetch");
        const answer = await app.fetch(String(input), init);
        if (String(input).endsWith("/auth/refresh")) {
          reached.push({ body: String(init?.body), status: answer.status });
        }
        return answer;
      },
    });
    assert.equal((await rejects(client.listSecrets())).code, "network_error");
    assert.ok((await client.getSession())?.retryKey, "the key stays with the unspent token");
    online = true;
    await client.listSecrets();
    const spent = reached.filter((request) => request.status === 200);
    assert.equal(spent.length, 1, JSON.stringify(reached));
    assert.deepEqual(Object.keys(JSON.parse(spent[0].body)).sort(), [
      "refresh_token",
      "retryKeyHash",
    ]);
    const replay = await app.fetch("/api/auth/refresh", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: spent[0].body,
    });
    const replayed = await replay.text();
    assert.equal(replay.status, 409, replayed);
    assert.equal(JSON.parse(replayed).error.code, "refresh_replayed");
    await assertLive(app, (await client.getSession())!.accessToken);
  },

  async "an access token the service calls expired is refreshed and the call retried"(app) {
    const { client, storage } = clientFor(app);
    const session = await client.signIn(wallet().provider);
    // The same live session, with an access token that expired an hour ago; the client's clock
    // believes it is fresh, so only the service's token_expired can trigger the refresh.
    const pastTokens = serviceSigner(app.config, { ttl: 60, now: () => Date.now() - 3600_000 });
    const { accessToken: expired } = await pastTokens.issue({
      userId: session.user.id,
      sessionId: sessionIdOf(session.accessToken),
      walletAddress: session.user.walletAddress,
    });
    await storage.setItem(
      "wallet-vault.session:http://127.0.0.1:54321/api",
      JSON.stringify({ ...session, accessToken: expired }),
    );
    const status = await client.listSecrets();
    assert.deepEqual(status.secrets, []);
    const now = await client.getSession();
    assert.ok(now);
    assert.notEqual(now.accessToken, expired);
    assert.notEqual(now.refreshToken, session.refreshToken);
  },

  async "signOut revokes the session on the service and forgets it"(app) {
    const { client, storage } = clientFor(app);
    const changes: unknown[] = [];
    const session = await client.signIn(wallet().provider);
    client.onSessionChange((s) => changes.push(s));
    assert.deepEqual(await client.signOut(), { revokedOnServer: true });
    assert.equal(await stored(storage), null);
    assert.deepEqual(changes, [null]);
    const response = await app.fetch("/api/secrets", { headers: bearer(session.accessToken) });
    assert.equal(response.status, 401);
    assert.equal((await response.json()).error.code, "session_revoked");
    assert.deepEqual(await client.signOut(), { revokedOnServer: false }, "already signed out");
  },

  async "signOut with scope global ends the creator's sessions on every device, and only theirs"(
    app,
  ) {
    const owner = wallet();
    const phone = clientFor(app);
    const laptop = clientFor(app);
    const stranger = clientFor(app);
    const logoutBodies: unknown[] = [];
    const lost = clientFor(app, {
      fetch: (input, init) => {
        const url = new URL(String(input));
        if (url.pathname.endsWith("/logout")) logoutBodies.push(init?.body ?? null);
        return app.fetch(url.href, init);
      },
    });
    await phone.client.signIn(owner.provider);
    await laptop.client.signIn(owner.provider);
    await lost.client.signIn(owner.provider);
    await stranger.client.signIn(wallet().provider);

    const global = await laptop.client.signOut({ scope: "global" });
    assert.deepEqual(global, { revokedOnServer: true });
    assert.equal(await stored(laptop.storage), null);
    for (const device of [phone, lost]) {
      const error = await rejects(device.client.listSecrets());
      assert.equal(error.code, "session_revoked");
      assert.equal(await stored(device.storage), null, "the other device forgets it too");
    }
    assert.deepEqual((await stranger.client.listSecrets()).secrets, []);
    // The scope travels in the body; a plain signOut sends none (the service's default: local).
    await lost.client.signIn(owner.provider);
    await lost.client.signOut();
    await lost.client.signIn(owner.provider);
    await lost.client.signOut({ scope: "global" });
    assert.deepEqual(logoutBodies, [null, JSON.stringify({ scope: "global" })]);
  },

  async "signOut with scope global reports failure and keeps the session when the service is unreachable"(
    app,
  ) {
    let reachable = true;
    const storage = memoryStorage();
    const { client } = clientFor(app, {
      storage,
      fetch: (input, init) => {
        if (!reachable) return Promise.reject(new TypeError("offline"));
        return app.fetch(new URL(String(input)).href, init);
      },
    });
    const session = await client.signIn(wallet().provider);
    reachable = false;
    const error = await rejects(client.signOut({ scope: "global" }));
    assert.equal(error.code, "network_error");
    assert.equal((await client.getSession())?.accessToken, session.accessToken, "kept, to retry");
    reachable = true;
    assert.deepEqual(await client.signOut({ scope: "global" }), { revokedOnServer: true });
    const response = await app.fetch("/api/secrets", { headers: bearer(session.accessToken) });
    assert.equal((await response.json()).error.code, "session_revoked");
  },

  async "a session the service ended elsewhere fails with session_revoked and is forgotten"(app) {
    const { client, storage } = clientFor(app);
    const session = await client.signIn(wallet().provider);
    const logout = await app.fetch("/api/auth/logout", {
      method: "POST",
      headers: bearer(session.accessToken),
    });
    assert.equal(logout.status, 204);
    const error = await rejects(client.listSecrets());
    assert.equal(error.code, "session_revoked");
    assert.equal(error.status, 401);
    assert.equal(await stored(storage), null);
  },

  async "without a session: status works, vault calls fail with not_signed_in"(app) {
    const { client } = clientFor(app);
    const status = await client.status();
    assert.equal(status.configured, true);
    assert.deepEqual(status.secrets, []);
    assert.equal((await rejects(client.listSecrets())).code, "not_signed_in");
    assert.equal((await rejects(client.saveSecret("provider_b_key", "x"))).code, "not_signed_in");
    assert.equal((await rejects(client.deleteSecret("provider_b_key"))).code, "not_signed_in");
  },

  async "wallet failures, an unreachable service and a non-JSON answer have their own codes"(
    app,
  ) {
    const { client } = clientFor(app);
    const error = await rejects(client.signIn(wallet({ chainId: 0 }).provider));
    assert.equal(error.code, "wallet_error", "chain id 0 is not a chain");

    const unreachable = createVaultClient({
      baseUrl: "http://127.0.0.1:54321/api",
      storage: memoryStorage(),
      fetch: () => Promise.reject(new TypeError("Failed to fetch")),
    });
    assert.equal((await rejects(unreachable.status())).code, "network_error");

    const notJson = createVaultClient({
      baseUrl: "http://127.0.0.1:54321/api",
      storage: memoryStorage(),
      fetch: () => Promise.resolve(new Response("<html>Bad gateway</html>", { status: 502 })),
    });
    const invalid = await rejects(notJson.status());
    assert.equal(invalid.code, "invalid_response");
    assert.equal(invalid.status, 502);
  },
});

describeWithDatabase("the browser vault client with a chain allow-list", {
  async "a refused chain is a VaultError with the service's code, status and details"(app) {
    const { client } = clientFor(app);
    const error = await rejects(client.signIn(wallet({ chainId: 5 }).provider));
    assert.equal(error.code, "chain_not_allowed");
    assert.equal(error.status, 401);
    assert.deepEqual(error.details, { allowedChainIds: [1] });
  },
}, { ALLOWED_CHAIN_IDS: "1" });

/** A client whose transport swaps the URI in the service's message for another site's. */
function createTampering(app: TestApp) {
  return clientFor(app, {
    fetch: async (input, init) => {
      const response = await app.fetch(String(input), init);
      if (!String(input).endsWith("/auth/nonce")) return response;
      const body = await response.json();
      body.message = body.message.replace("URI: http://127.0.0.1:54321", "URI: https://evil.test");
      return Response.json(body);
    },
  });
}

// ---------------------------------------------------------------------------------------------

Deno.test("the message check accepts viem's EIP-4361 message and names any field that differs", () => {
  const account = newWallet();
  const issuedAt = new Date("2026-11-22T10:00:00.000Z");
  const expiresAt = new Date("2026-11-22T10:10:00.000Z");
  const nonce: NonceResponse = {
    nonce: "abcdefgh12345678",
    issuedAt: issuedAt.toISOString(),
    expiresAt: expiresAt.toISOString(),
    domain: "app.example.com",
    uri: "https://app.example.com",
    chainId: 137,
    version: "1",
    statement: "Sign in to wallet-vault. It costs no gas.",
  };
  const build = (overrides: Record<string, unknown> = {}) =>
    createSiweMessage({
      address: account.address,
      domain: nonce.domain,
      uri: nonce.uri,
      chainId: nonce.chainId,
      nonce: nonce.nonce,
      issuedAt,
      expirationTime: expiresAt,
      statement: nonce.statement,
      version: "1",
      ...overrides,
    });
  const expected = { nonce, address: account.address.toLowerCase() };
  assert.equal(signInMessageMismatch(build(), expected), null);
  assert.equal(signInMessageMismatch(build({ domain: "evil.test" }), expected), "domain");
  assert.equal(signInMessageMismatch(build({ address: newWallet().address }), expected), "address");
  assert.equal(signInMessageMismatch(build({ uri: "https://evil.test" }), expected), "URI");
  assert.equal(signInMessageMismatch(build({ chainId: 1 }), expected), "Chain ID");
  assert.equal(signInMessageMismatch(build({ nonce: "zzzzzzzz12345678" }), expected), "Nonce");
  assert.equal(
    signInMessageMismatch(build({ expirationTime: new Date("2030-01-01") }), expected),
    "Expiration Time",
  );
  assert.equal(
    signInMessageMismatch(build({ statement: "Approve everything." }), expected),
    "statement",
  );
});

Deno.test("discoverWallets collects EIP-6963 announcements, and falls back to window.ethereum", async () => {
  const target = new EventTarget();
  const provider: Eip1193Provider = { request: () => Promise.resolve(null) };
  const info = { uuid: "u-1", name: "Wallet One", icon: "data:,", rdns: "one.example" };
  target.addEventListener("eip6963:requestProvider", () => {
    target.dispatchEvent(
      new CustomEvent("eip6963:announceProvider", { detail: { info, provider } }),
    );
    // A malformed announcement is ignored.
    target.dispatchEvent(new CustomEvent("eip6963:announceProvider", { detail: { info: {} } }));
  });
  const found = await discoverWallets({ target, waitMs: 0 });
  assert.equal(found.length, 1);
  assert.equal(found[0].info.name, "Wallet One");
  assert.equal(found[0].provider, provider);

  const global = globalThis as { ethereum?: Eip1193Provider };
  global.ethereum = provider;
  try {
    const legacy = await discoverWallets({ target: new EventTarget(), waitMs: 0 });
    assert.equal(legacy.length, 1);
    assert.equal(legacy[0].provider, provider);
  } finally {
    delete global.ethereum;
  }
});

Deno.test("the browser client calls an http:// API on any host, as a page on that host needs (docs/security.md says why)", async () => {
  const asked: string[] = [];
  for (const baseUrl of ["http://192.168.1.20:54321/api", "http://vault.example.com/api"]) {
    const client = createVaultClient({
      baseUrl,
      storage: memoryStorage(),
      fetch: (input) => {
        asked.push(String(input));
        return Promise.resolve(Response.json({ configured: true, secretTypes: [], secrets: [] }));
      },
    });
    await client.status();
  }
  assert.deepEqual(asked, [
    "http://192.168.1.20:54321/api/secrets",
    "http://vault.example.com/api/secrets",
  ]);
});
