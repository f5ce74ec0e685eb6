/**
 * A refresh tried again after a lost answer, and a captured refresh request sent again: the first
 * try carries only the retry key's commitment (`retryKeyHash`, its SHA-256), a retry the key
 * (`retryKey`). A verbatim copy of the first request gets nothing; the client's retry with the key
 * gets the successor; a wrong key, another commitment, a late retry or one after the successor was
 * used is reuse and ends the session. Real database, real signatures, through the /api proxy.
 */
import assert from "node:assert/strict";
import {
  hashRefreshToken,
  RETRY_KEY_HASH,
  retryKeyCommitment,
} from "../functions/_shared/auth/refresh-tokens.ts";
import { createVaultClient, memoryStorage } from "../sdk/src/browser.ts";
import { retryKeyHash } from "../sdk/src/session-storage.ts";
import { bearer, signIn, type TestApp } from "./support/app.ts";
import { describeWithDatabase } from "./support/suite.ts";

/** The longest the browser client waits for one answer (its timeoutMs cap, docs/api.md). */
const MAX_BROWSER_TIMEOUT_MS = 60_000;
/** The grace a retry gets (docs/api.md): two of those waits, held by the tests below. */
const RETRY_GRACE_SECONDS = (2 * MAX_BROWSER_TIMEOUT_MS) / 1000;

interface SessionAnswer {
  access_token: string;
  refresh_token: string;
}

/** A retry key as the browser client makes one: 256 random bits, as hex. */
function newKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** The commitment computed apart from the code under test: SHA-256, base64url, no padding. */
async function commitmentOf(key: string): Promise<string> {
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key)),
  );
  return btoa(String.fromCharCode(...digest)).replaceAll("+", "-").replaceAll("/", "_")
    .replace(/=+$/, "");
}

/** A refresh body sent exactly as given (a captured request is replayed byte for byte). */
function refreshWith(app: TestApp, body: string): Promise<Response> {
  return app.fetch("/api/auth/refresh", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
}

const refresh = (app: TestApp, body: Record<string, unknown>) =>
  refreshWith(app, JSON.stringify(body));

async function ok(response: Response | Promise<Response>): Promise<SessionAnswer> {
  const answered = await response;
  const text = await answered.text();
  assert.equal(answered.status, 200, text);
  return JSON.parse(text);
}

async function refused(
  response: Response | Promise<Response>,
  status: number,
  code: string,
): Promise<{ text: string; message: string }> {
  const answered = await response;
  const text = await answered.text();
  assert.equal(answered.status, status, text);
  const { error } = JSON.parse(text);
  assert.equal(error.code, code, text);
  return { text, message: error.message };
}

async function listStatus(app: TestApp, accessToken: string): Promise<number> {
  const response = await app.fetch("/api/secrets", { headers: bearer(accessToken) });
  await response.body?.cancel();
  return response.status;
}

async function assertLive(app: TestApp, answer: SessionAnswer): Promise<void> {
  assert.equal(await listStatus(app, answer.access_token), 200, "the session is still live");
}

async function assertRevokedForReuse(app: TestApp, answer: SessionAnswer): Promise<void> {
  await refused(
    app.fetch("/api/secrets", { headers: bearer(answer.access_token) }),
    401,
    "session_revoked",
  );
  const [row] = await app.database.db.query<{ revoked_reason: string }>(
    `select s.revoked_reason from public.auth_sessions s
       join public.auth_refresh_tokens t on t.session_id = s.id where t.token_hash = $1`,
    [hashRefreshToken(answer.refresh_token)],
  );
  assert.equal(row.revoked_reason, "refresh_token_reuse");
}

async function tokensOfUser(app: TestApp, userId: string): Promise<number> {
  const [{ tokens }] = await app.database.db.query<{ tokens: number }>(
    `select count(*)::int as tokens from public.auth_refresh_tokens t
       join public.auth_sessions s on s.id = t.session_id where s.user_id = $1`,
    [userId],
  );
  return tokens;
}

describeWithDatabase("refresh retries and replays", {
  async "a captured first refresh request, replayed verbatim within the grace, gets no successor and ends nothing"(
    app,
  ) {
    const signedIn = await signIn(app);
    const key = newKey();
    const captured = JSON.stringify({
      refresh_token: signedIn.refreshToken,
      retryKeyHash: await commitmentOf(key),
    });
    const owners = await ok(refreshWith(app, captured));
    // The copy, sent at once (well within the grace) while the owner's successor is unused.
    const replay = await refused(refreshWith(app, captured), 409, "refresh_replayed");
    assert.ok(!replay.text.includes(owners.refresh_token), "the successor is not handed out");
    assert.ok(!replay.text.includes("access_token"));
    // The owner's client could have sent that request late itself, so nothing is revoked: the
    // owner's session and its successor go on.
    await assertLive(app, owners);
    const onward = await ok(refresh(app, { refresh_token: owners.refresh_token }));
    await assertLive(app, onward);
    assert.equal(await tokensOfUser(app, signedIn.userId), 3, "no token was minted for the copy");
  },

  async "the client's retry with the key gets the same successor; the first request copied still gets nothing"(
    app,
  ) {
    const signedIn = await signIn(app);
    const key = newKey();
    const first = { refresh_token: signedIn.refreshToken, retryKeyHash: await commitmentOf(key) };
    const lost = await ok(refresh(app, first)); // the answer the client never saw
    const retried = await ok(refresh(app, { refresh_token: signedIn.refreshToken, retryKey: key }));
    assert.equal(retried.refresh_token, lost.refresh_token);
    await refused(refresh(app, first), 409, "refresh_replayed");
    assert.equal(await tokensOfUser(app, signedIn.userId), 2, "the first token and one successor");
    await assertLive(app, retried);
  },

  async "a retry with a wrong key is refused as reuse and ends the session"(app) {
    const signedIn = await signIn(app);
    const first = {
      refresh_token: signedIn.refreshToken,
      retryKeyHash: await commitmentOf(newKey()),
    };
    const rotated = await ok(refresh(app, first));
    const wrong = await refused(
      refresh(app, { refresh_token: signedIn.refreshToken, retryKey: newKey() }),
      401,
      "refresh_token_reused",
    );
    assert.ok(!wrong.text.includes(rotated.refresh_token));
    await assertRevokedForReuse(app, rotated);
  },

  async "a first try sent again with another commitment, or with none, is a copy of the token"(
    app,
  ) {
    for (const withCommitment of [true, false]) {
      const signedIn = await signIn(app);
      const token = signedIn.refreshToken;
      const rotated = await ok(
        refresh(app, { refresh_token: token, retryKeyHash: await commitmentOf(newKey()) }),
      );
      const copy = withCommitment
        ? { refresh_token: token, retryKeyHash: await commitmentOf(newKey()) }
        : { refresh_token: token };
      await refused(refresh(app, copy), 401, "refresh_token_reused");
      await assertRevokedForReuse(app, rotated);
    }
  },

  async "a retry with the key is reuse once the successor was used, or past the grace, not within it"(
    app,
  ) {
    const key = newKey();
    const used = await signIn(app);
    const first = await ok(refresh(app, {
      refresh_token: used.refreshToken,
      retryKeyHash: await commitmentOf(key),
    }));
    const onward = await ok(refresh(app, { refresh_token: first.refresh_token }));
    await refused(
      refresh(app, { refresh_token: used.refreshToken, retryKey: key }),
      401,
      "refresh_token_reused",
    );
    await assertRevokedForReuse(app, onward);

    const spentAgo = async (token: string, seconds: number) =>
      await app.database.db.query(
        `update public.auth_refresh_tokens set used_at = now() - make_interval(secs => $2)
          where token_hash = $1`,
        [hashRefreshToken(token), seconds],
      );
    // Just within the grace, a retry still gets the successor.
    const inTime = await signIn(app);
    const inTimeKey = newKey();
    const answered = await ok(refresh(app, {
      refresh_token: inTime.refreshToken,
      retryKeyHash: await commitmentOf(inTimeKey),
    }));
    await spentAgo(inTime.refreshToken, RETRY_GRACE_SECONDS - 10);
    const again = await ok(
      refresh(app, { refresh_token: inTime.refreshToken, retryKey: inTimeKey }),
    );
    assert.equal(again.refresh_token, answered.refresh_token);

    const late = await signIn(app);
    const rotated = await ok(refresh(app, {
      refresh_token: late.refreshToken,
      retryKeyHash: await commitmentOf(key),
    }));
    await spentAgo(late.refreshToken, RETRY_GRACE_SECONDS + 1);
    await refused(
      refresh(app, { refresh_token: late.refreshToken, retryKey: key }),
      401,
      "refresh_token_reused",
    );
    await assertRevokedForReuse(app, rotated);
  },

  async "a retry that arrives before its first try spends the token, and the late first try ends nothing"(
    app,
  ) {
    // The first try's request was held up (which is why the client gave up and tried again) and
    // reaches the service after the retry, or another tab that found the key stored sent the key.
    const signedIn = await signIn(app);
    const key = newKey();
    const retried = await ok(refresh(app, { refresh_token: signedIn.refreshToken, retryKey: key }));
    await refused(
      refresh(app, { refresh_token: signedIn.refreshToken, retryKeyHash: await commitmentOf(key) }),
      409,
      "refresh_replayed",
    );
    await assertLive(app, retried);
    // A retry of that retry is still answered with the same successor.
    const again = await ok(refresh(app, { refresh_token: signedIn.refreshToken, retryKey: key }));
    assert.equal(again.refresh_token, retried.refresh_token);
  },

  async "a first try and its retry at once: one rotation, and the retry gets the successor"(app) {
    const signedIn = await signIn(app);
    const key = newKey();
    const [first, retry] = await Promise.all([
      refresh(app, { refresh_token: signedIn.refreshToken, retryKeyHash: await commitmentOf(key) }),
      refresh(app, { refresh_token: signedIn.refreshToken, retryKey: key }),
    ]);
    const retried = await ok(retry);
    const firstText = await first.text();
    if (first.status === 200) {
      assert.equal(JSON.parse(firstText).refresh_token, retried.refresh_token);
    } else {
      assert.equal(first.status, 409, firstText);
      assert.equal(JSON.parse(firstText).error.code, "refresh_replayed");
    }
    assert.equal(await tokensOfUser(app, signedIn.userId), 2);
    await assertLive(app, retried);
  },

  async "the old shape and mixed shapes are refused with 400 and spend nothing"(app) {
    const signedIn = await signIn(app);
    const key = newKey();
    const token = signedIn.refreshToken;
    const old = await refused(
      refresh(app, { refresh_token: token, retry_key: key }),
      400,
      "invalid_request",
    );
    assert.match(old.message, /retry_key is no longer accepted: send retryKeyHash/);
    const mixed = await refused(
      refresh(app, { refresh_token: token, retryKeyHash: await commitmentOf(key), retryKey: key }),
      400,
      "invalid_request",
    );
    assert.match(mixed.message, /not both/);
    const hash = await commitmentOf(key);
    const malformed = [
      key, // the key itself where its hash belongs
      hash.slice(0, 42), // too short
      `${hash.slice(0, 42)}B`, // a second spelling of a digest (nonzero trailing bits)
      `${hash}=`, // padded
    ];
    for (const retryKeyHash of malformed) {
      const { message } = await refused(
        refresh(app, { refresh_token: token, retryKeyHash }),
        400,
        "invalid_request",
      );
      assert.match(message, /^retryKeyHash: must be the retry key's SHA-256/);
      assert.ok(!message.includes(retryKeyHash));
    }
    await refused(
      refresh(app, { refresh_token: token, retryKey: "short" }),
      400,
      "invalid_request",
    );
    // None of these spent the token.
    await ok(refresh(app, { refresh_token: token, retryKeyHash: hash }));
  },

  async "the browser client's hash of its key is the commitment the service stores"(app) {
    const signedIn = await signIn(app);
    const key = newKey();
    const sent = await retryKeyHash(key);
    assert.match(sent, RETRY_KEY_HASH);
    assert.equal(sent, retryKeyCommitment(key).text);
    await ok(refresh(app, { refresh_token: signedIn.refreshToken, retryKeyHash: sent }));
    const [{ commitment }] = await app.database.db.query<{ commitment: Uint8Array }>(
      "select retry_key_hash as commitment from public.auth_refresh_tokens where token_hash = $1",
      [hashRefreshToken(signedIn.refreshToken)],
    );
    assert.deepEqual(
      new Uint8Array(commitment),
      new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key))),
    );
  },
});

Deno.test("the browser client waits 60 s at most for one answer (half the retry grace)", () => {
  const client = (timeoutMs: number) =>
    createVaultClient({ baseUrl: "http://127.0.0.1:1/api", storage: memoryStorage(), timeoutMs });
  client(MAX_BROWSER_TIMEOUT_MS);
  assert.throws(() => client(MAX_BROWSER_TIMEOUT_MS + 1), TypeError);
});

Deno.test("without crypto.subtle (an insecure page) a refresh fails before anything is sent, saying why", async () => {
  const baseUrl = "http://127.0.0.1:1/api";
  const storage = memoryStorage();
  const due = {
    accessToken: "a.b.c",
    refreshToken: "refresh-token-never-sent",
    expiresAt: Math.floor(Date.now() / 1000) - 60,
    user: { id: "00000000-0000-4000-8000-000000000000", walletAddress: "0x0" },
  };
  await storage.setItem(`wallet-vault.session:${baseUrl}`, JSON.stringify(due));
  const sent: string[] = [];
  const client = createVaultClient({
    baseUrl,
    storage,
    fetch: (input) => {
      sent.push(String(input));
      return Promise.reject(new TypeError("Failed to fetch"));
    },
  });
  const subtle = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(crypto), "subtle")!;
  Object.defineProperty(crypto, "subtle", { value: undefined, configurable: true });
  try {
    assert.equal(crypto.subtle, undefined);
    await assert.rejects(client.listSecrets(), (error: Error) => {
      assert.ok(error instanceof TypeError, String(error));
      assert.match(error.message, /crypto\.subtle.*secure contexts: serve the page over https/);
      return true;
    });
  } finally {
    delete (crypto as { subtle?: unknown }).subtle;
    assert.equal(Object.getOwnPropertyDescriptor(crypto, "subtle"), undefined);
    assert.ok(subtle.get !== undefined && crypto.subtle !== undefined);
  }
  assert.deepEqual(sent, [], "no refresh request went out");
});
