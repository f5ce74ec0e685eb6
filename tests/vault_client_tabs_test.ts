/**
 * The browser client (sdk/src/browser.ts) where the network or another tab misbehaves: a redirect
 * is never followed (the body would go to another origin), a call that gets no answer gives up and
 * frees the cross-tab refresh lock, an answer about an old session does not sign a newer one out,
 * and another tab's sign-in or sign-out reaches this tab's listeners. Real loopback servers where
 * the transport matters; the service itself is not needed.
 */
import assert from "node:assert/strict";
import {
  createVaultClient,
  memoryStorage,
  type VaultSession,
  type VaultStorage,
} from "../sdk/src/browser.ts";
import { rejects } from "./support/vault-error.ts";

const KEY = "wallet-vault.session:test";

function session(name: string, expiresAt = Math.floor(Date.now() / 1000) + 3600): VaultSession {
  return {
    accessToken: `access-${name}`,
    refreshToken: `refresh-${name}`,
    expiresAt,
    user: { id: `user-${name}`, walletAddress: `0x${name.padEnd(40, "0")}` },
  };
}

async function storageWith(value: VaultSession | null): Promise<VaultStorage> {
  const storage = memoryStorage();
  if (value !== null) await storage.setItem(KEY, JSON.stringify(value));
  return storage;
}

/** A retry key's commitment as the service computes it: SHA-256, base64url without padding. */
async function commitmentOf(key: string): Promise<string> {
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key)),
  );
  return btoa(String.fromCharCode(...digest)).replaceAll("+", "-").replaceAll("/", "_")
    .replace(/=+$/, "");
}

/** Fails instead of hanging the suite when `promise` is still pending after `ms`. */
function settlesWithin<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stuck = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: still pending after ${ms} ms`)), ms);
  });
  return Promise.race([promise, stuck]).finally(() => clearTimeout(timer));
}

Deno.test("a redirect is refused: the key being saved never reaches the other origin", async () => {
  const received: string[] = [];
  const other = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    received.push(`${request.method} ${await request.text()}`);
    return Response.json({ secretType: "provider_b_key", updatedAt: new Date().toISOString() });
  });
  const vault = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) =>
      new Response(null, {
        status: 307,
        headers: {
          location: `http://127.0.0.1:${other.addr.port}${new URL(request.url).pathname}`,
        },
      }),
  );
  try {
    const client = createVaultClient({
      baseUrl: `http://127.0.0.1:${vault.addr.port}/api`,
      storage: await storageWith(session("a")),
      storageKey: KEY,
      apiKey: "sb_publishable_test",
    });
    const error = await rejects(client.saveSecret("provider_b_key", "sk-live-not-for-them"));
    assert.equal(error.code, "redirect_refused");
    assert.equal(error.status, 307);
    assert.ok(!error.message.includes("sk-live"), "the error quotes nothing of the body");
    assert.deepEqual(received, []);
  } finally {
    await vault.shutdown();
    await other.shutdown();
  }
});

Deno.test("a call that gets no answer times out, and a hung refresh does not hold up sign-out", async () => {
  const requests: string[] = [];
  const never = Promise.withResolvers<Response>();
  const silent = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    requests.push(new URL(request.url).pathname);
    return never.promise;
  });
  try {
    // The access token is due for a refresh, so the first call refreshes, under the lock.
    const storage = await storageWith(session("a", Math.floor(Date.now() / 1000)));
    const client = createVaultClient({
      baseUrl: `http://127.0.0.1:${silent.addr.port}/api`,
      storage,
      storageKey: KEY,
      timeoutMs: 300,
    });
    const error = await settlesWithin(rejects(client.listSecrets()), 10_000, "listSecrets");
    assert.equal(error.code, "timeout");
    // Sent again once (the service may have rotated unseen), then given up.
    assert.deepEqual(requests, ["/api/auth/refresh", "/api/auth/refresh"]);
    // A timeout says nothing about the session: it is kept.
    assert.equal((await client.getSession())?.refreshToken, "refresh-a");
    // Sign-out is best effort: its own refresh times out too, and the session is forgotten.
    const signedOut = await settlesWithin(client.signOut(), 10_000, "signOut");
    assert.deepEqual(signedOut, { revokedOnServer: false });
    assert.equal(await client.getSession(), null);
  } finally {
    never.resolve(new Response(null, { status: 503 }));
    await silent.shutdown();
  }
});

Deno.test("an answer about an old session does not sign out the newer one another tab stored", async () => {
  const storage = await storageWith(session("old"));
  const answer = Promise.withResolvers<void>();
  const asked = Promise.withResolvers<void>();
  const tab = createVaultClient({
    baseUrl: "http://127.0.0.1:54321/api",
    storage,
    storageKey: KEY,
    fetch: async () => {
      asked.resolve();
      await answer.promise;
      return Response.json(
        { error: { code: "session_revoked", message: "This session has ended; sign in again." } },
        { status: 401 },
      );
    },
  });
  const listing = rejects(tab.listSecrets());
  await asked.promise;
  // Meanwhile another tab signed out and in again: storage holds a new session.
  await storage.setItem(KEY, JSON.stringify(session("new")));
  answer.resolve();
  assert.equal((await listing).code, "session_revoked");
  assert.equal((await tab.getSession())?.refreshToken, "refresh-new");

  // When the answer is about the session still stored, it is forgotten.
  const again = rejects(tab.listSecrets());
  assert.equal((await again).code, "session_revoked");
  assert.equal(await tab.getSession(), null);
});

Deno.test("another tab's sign-in and sign-out reach this tab's listeners, and only its own key's", async () => {
  const storage = await storageWith(null);
  const client = createVaultClient({
    baseUrl: "http://127.0.0.1:54321/api",
    storage,
    storageKey: KEY,
    fetch: () => Promise.reject(new TypeError("no network in this test")),
  });
  const seen: (string | null)[] = [];
  const stop = client.onSessionChange((changed) => seen.push(changed?.user.id ?? null));
  // What a browser dispatches in the other tabs when one tab writes localStorage.
  const storageEvent = (key: string | null, newValue: string | null, area: unknown = storage) =>
    globalThis.dispatchEvent(
      Object.assign(new Event("storage"), { key, newValue, storageArea: area }),
    );
  try {
    storageEvent(KEY, JSON.stringify(session("y")));
    storageEvent("someone-else's-key", JSON.stringify(session("z")));
    storageEvent(KEY, JSON.stringify(session("z")), memoryStorage()); // another storage area
    storageEvent(KEY, "not a session");
    storageEvent(KEY, null);
    storageEvent(KEY, JSON.stringify(session("w")));
    storageEvent(null, null); // the whole storage cleared
    assert.deepEqual(seen, ["user-y", null, null, "user-w", null]);
  } finally {
    stop();
  }
  storageEvent(KEY, JSON.stringify(session("v")));
  assert.equal(seen.length, 5, "a listener that stopped hears nothing more");
});

/** A refresh answer for creator `name`, as the service gives it. */
function refreshed(name: string): Response {
  return Response.json({
    access_token: `access-${name}2`,
    refresh_token: `refresh-${name}2`,
    expires_in: 3600,
    user: { id: `user-${name}`, wallet_address: `0x${name.padEnd(40, "0")}` },
  });
}

/** A tab's client over `storage`, its requests answered by `fetch`. */
function tabOver(storage: VaultStorage, fetch: typeof globalThis.fetch) {
  return createVaultClient({
    baseUrl: "http://127.0.0.1:54321/api",
    storage,
    storageKey: KEY,
    fetch,
  });
}

Deno.test("a refresh does not carry a call over to another creator who signed in meanwhile", async () => {
  const storage = await storageWith(session("a"));
  const sent: string[] = [];
  const tab = tabOver(storage, async (input, init) => {
    const path = new URL(String(input)).pathname;
    sent.push(`${init?.method} ${path} ${new Headers(init?.headers).get("authorization")}`);
    if (path === "/api/secrets") {
      // Another tab signs in as creator b while this PUT, made for a, is answered "expired".
      await storage.setItem(KEY, JSON.stringify(session("b")));
      return Response.json(
        { error: { code: "token_expired", message: "The session token has expired." } },
        { status: 401 },
      );
    }
    return refreshed("b");
  });
  const error = await rejects(tab.saveSecret("provider_b_key", "sk-typed-for-a"));
  assert.equal(error.code, "session_changed");
  // Sent once, for a; never again with b's token, and nothing refreshed on b's behalf.
  assert.deepEqual(sent, ["PUT /api/secrets Bearer access-a"]);
  assert.equal((await tab.getSession())?.refreshToken, "refresh-b");
});

Deno.test("a refresh answered after a sign-in elsewhere leaves that sign-in stored, and signs its own successor out", async () => {
  const storage = await storageWith(session("a", Math.floor(Date.now() / 1000))); // due
  const release = Promise.withResolvers<void>();
  const reached = Promise.withResolvers<void>();
  const logouts: (string | null)[] = [];
  const tab = tabOver(storage, async (input, init) => {
    const path = new URL(String(input)).pathname;
    if (path === "/api/auth/logout") {
      logouts.push(new Headers(init?.headers).get("authorization"));
      return new Response(null, { status: 204 });
    }
    reached.resolve();
    await release.promise; // a slow network
    return refreshed("a");
  });
  const listing = rejects(tab.listSecrets());
  await reached.promise;
  await storage.setItem(KEY, JSON.stringify(session("b"))); // another tab signs in as b
  release.resolve();
  assert.equal((await listing).code, "session_changed");
  assert.equal((await tab.getSession())?.user.id, "user-b");
  await settlesWithin(
    (async () => {
      while (logouts.length === 0) await new Promise((r) => setTimeout(r, 5));
    })(),
    5_000,
    "the orphaned successor's logout",
  );
  assert.deepEqual(logouts, ["Bearer access-a2"]);
});

Deno.test("a custom fetch that drops the signal still gives up at timeoutMs", async () => {
  const never = Promise.withResolvers<Response>();
  const client = createVaultClient({
    baseUrl: "http://127.0.0.1:54321/api",
    storage: await storageWith(session("a")),
    storageKey: KEY,
    timeoutMs: 200,
    // Rebuilds init to add a header, as an app's wrapper might, and so loses the signal.
    fetch: (_input, init) => {
      void { ...init, signal: undefined };
      return never.promise;
    },
  });
  try {
    const error = await settlesWithin(rejects(client.listSecrets()), 5_000, "listSecrets");
    assert.equal(error.code, "timeout");
  } finally {
    never.resolve(new Response(null, { status: 503 }));
  }
});

Deno.test("an apiKey a header cannot carry is refused when the client is made, not read as a bad session", () => {
  for (const apiKey of ["sb_publishable_x\n", "key with space", "sb_publishable_’"]) {
    assert.throws(
      () => createVaultClient({ baseUrl: "http://127.0.0.1:54321/api", apiKey }),
      (error: Error) => error instanceof TypeError && /apiKey/.test(error.message),
    );
  }
});

Deno.test("without Web Locks, two tabs refreshing with the same retry key keep the one successor", async () => {
  // A browser without navigator.locks: both tabs refresh at once, with the retry key the first
  // stored. Each first sends its hash; the service, as the real one does, spends the token on the
  // first and answers the second 409 refresh_replayed, whose retry with the key gets the same
  // successor.
  const proto = Object.getPrototypeOf(navigator);
  const locks = Object.getOwnPropertyDescriptor(proto, "locks");
  Object.defineProperty(proto, "locks", { get: () => undefined, configurable: true });
  try {
    const storage = await storageWith(session("a", Math.floor(Date.now() / 1000))); // due
    const keys = new Set<string>();
    const shapes: string[] = [];
    const logouts: string[] = [];
    let spent = false;
    const service = async (input: RequestInfo | URL, init?: RequestInit) => {
      const path = new URL(String(input)).pathname;
      if (path === "/api/auth/logout") {
        logouts.push(new Headers(init?.headers).get("authorization")!);
        return new Response(null, { status: 204 });
      }
      if (path === "/api/auth/refresh") {
        const body = JSON.parse(String(init?.body));
        shapes.push(Object.keys(body).sort().join());
        keys.add(body.retryKeyHash ?? await commitmentOf(body.retryKey));
        const replayed = body.retryKeyHash !== undefined && spent;
        spent = true;
        await new Promise((resolve) => setTimeout(resolve, 20));
        if (!replayed) return refreshed("a");
        return Response.json(
          { error: { code: "refresh_replayed", message: "This refresh was already made." } },
          { status: 409 },
        );
      }
      return Response.json({ configured: true, project: "p", storage: "s", secrets: [] });
    };
    const [first, second] = [tabOver(storage, service), tabOver(storage, service)];
    const listed = await Promise.allSettled([
      first.listSecrets(),
      new Promise((resolve) => setTimeout(resolve, 5)).then(() => second.listSecrets()),
    ]);
    assert.deepEqual(listed.map((outcome) => outcome.status), ["fulfilled", "fulfilled"]);
    assert.equal(keys.size, 1, "one retry key for both tries");
    assert.deepEqual(shapes, [
      "refresh_token,retryKeyHash",
      "refresh_token,retryKeyHash",
      "refresh_token,retryKey",
    ]);
    assert.deepEqual(logouts, [], "the successor both tabs hold was not signed out");
    assert.equal((await first.getSession())?.refreshToken, "refresh-a2");
  } finally {
    if (locks === undefined) delete proto.locks;
    else Object.defineProperty(proto, "locks", locks);
  }
});
