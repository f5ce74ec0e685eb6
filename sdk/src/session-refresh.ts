/**
 * The browser client's session kept live: the access token refreshed before it expires, the
 * refresh token rotated once at a time across tabs, and calls made with the session.
 *
 * Written in erasable TypeScript only: the local server serves it as /client/session-refresh.js.
 */
import { VaultError, type VaultErrorCode } from "./errors.ts";
import type { ServiceCall } from "./service-call.ts";
import {
  retryKeyHash,
  sessionFromAnswer,
  type SessionStore,
  type VaultSession,
} from "./session-storage.ts";

// Codes after which the stored session is useless: it is forgotten rather than retried forever.
const SESSION_ENDED = new Set<VaultErrorCode>([
  "invalid_token",
  "session_revoked",
  "invalid_refresh_token",
  "refresh_token_reused",
]);

// Failures after which a refresh may have happened unseen: retried once with the same token and
// its retry key (refresh_replayed: a try with this key, maybe an earlier call's, spent it and its
// answer was lost).
const RETRIED = new Set<VaultErrorCode>(["timeout", "network_error", "refresh_replayed"]);

interface LockManager {
  request<T>(name: string, callback: () => Promise<T>): Promise<T>;
}

export interface SessionRefreshOptions {
  readonly call: ServiceCall;
  readonly sessions: SessionStore;
  /** Names the cross-tab lock: one per stored session. */
  readonly storageKey: string;
  readonly now: () => number;
  /** Refresh this many seconds before the access token expires. */
  readonly marginSeconds: number;
}

export interface SessionRefresh {
  /** Whether `session`'s access token is about to expire. */
  needsRefresh(session: VaultSession): boolean;
  /** The session after `stale`, rotated once whoever asks (this client, another tab). */
  refresh(stale: VaultSession): Promise<VaultSession>;
  /** A call with the session; an access token the server calls expired is refreshed once. */
  authed<T>(method: "GET" | "PUT" | "DELETE" | "POST", path: string, body?: unknown): Promise<T>;
}

export function createSessionRefresh(options: SessionRefreshOptions): SessionRefresh {
  const { call, sessions, storageKey, now, marginSeconds } = options;
  const readSession = sessions.read;
  const toSession = (body: unknown) => sessionFromAnswer(body, now());
  let refreshing: Promise<VaultSession> | null = null;

  function needsRefresh(session: VaultSession): boolean {
    return session.expiresAt - marginSeconds <= now() / 1000;
  }

  /**
   * Rotates the refresh token. Refresh tokens are single-use and a reused one revokes the session,
   * so refreshes are serialized: within this client by one shared promise, across tabs by a Web
   * Lock, and a tab that waited re-reads storage and takes the session another tab just stored.
   */
  function refresh(stale: VaultSession): Promise<VaultSession> {
    refreshing ??= withLock(async () => {
      const current = await readSession();
      if (current === null) throw notSignedIn();
      // Another creator signed in meanwhile (another tab): the call that asked was made for
      // `stale`'s creator, and must not go on as this one (a key saved into the wrong vault).
      if (current.user.id !== stale.user.id) throw sessionChanged();
      if (current.refreshToken !== stale.refreshToken && !needsRefresh(current)) return current;
      // One key for every try of this token's refresh, stored with it first: a later call's
      // retry (both answers lost, say), from this tab or another, is then not a copy of the token.
      // Every call's first request sends only the key's hash, even for a key stored by a call that
      // failed (offline, 503): a request that spends the token must be worthless when replayed.
      // The key itself goes out only on this call's retry, once the first may have spent it.
      const pending = await sessions.withRetryKey(current);
      if (pending === null) throw sessionChanged();
      const retry = { refresh_token: pending.refreshToken, retryKey: pending.retryKey };
      const rotate = async (body: object) => await call("POST", "/auth/refresh", { body });
      try {
        const next = toSession(
          await rotate({
            refresh_token: pending.refreshToken,
            retryKeyHash: await retryKeyHash(pending.retryKey),
          }).catch((error) => {
            // The service may have rotated and the answer been lost: the same token with the key,
            // within two minutes, gets the same successor (not a verdict of theft).
            if (!(error instanceof VaultError && RETRIED.has(error.code))) throw error;
            return rotate(retry);
          }),
        );
        // Stored only over the session it replaces: a sign-in or sign-out made meanwhile (signIn
        // takes no lock) stands, and the successor nobody holds is ended on the service.
        if (!(await sessions.replace(pending, next))) {
          // Another tab with the same retry key got the same successor and stored it first
          // (no Web Locks): it is this session, not an orphan.
          const stored = await readSession();
          if (stored?.refreshToken === next.refreshToken) return stored;
          call("POST", "/auth/logout", { accessToken: next.accessToken }).catch(() => {});
          throw sessionChanged();
        }
        return next;
      } catch (error) {
        if (error instanceof VaultError && SESSION_ENDED.has(error.code)) {
          await sessions.forget(current);
        }
        throw error;
      }
    }).finally(() => {
      refreshing = null;
    });
    return refreshing;
  }

  function withLock<T>(work: () => Promise<T>): Promise<T> {
    const locks = (globalThis as { navigator?: { locks?: LockManager } }).navigator?.locks;
    return locks ? locks.request(`${storageKey}:refresh`, work) : work();
  }

  async function liveSession(): Promise<VaultSession> {
    const session = await readSession();
    if (session === null) throw notSignedIn();
    return needsRefresh(session) ? await refresh(session) : session;
  }

  /** A call with the session; an access token the server calls expired is refreshed once. */
  async function authed<T>(
    method: "GET" | "PUT" | "DELETE" | "POST",
    path: string,
    body?: unknown,
  ): Promise<T> {
    let session = await liveSession();
    for (let attempt = 0;; attempt++) {
      try {
        return await call<T>(method, path, { body, accessToken: session.accessToken });
      } catch (error) {
        if (!(error instanceof VaultError)) throw error;
        if (error.code === "token_expired" && attempt === 0) {
          session = await refresh(session);
          continue;
        }
        if (SESSION_ENDED.has(error.code)) await sessions.forget(session);
        throw error;
      }
    }
  }

  return { needsRefresh, refresh, authed };
}

/** The error of a call that needs a session when none is stored. */
export function notSignedIn(): VaultError {
  return new VaultError("not_signed_in", "Sign in with your wallet first.");
}

function sessionChanged(): VaultError {
  return new VaultError(
    "session_changed",
    "The session changed while this call waited (a sign-in or sign-out, maybe in another tab); " +
      "nothing more was sent for it.",
  );
}
