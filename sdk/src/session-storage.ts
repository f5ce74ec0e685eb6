/**
 * Where the browser keeps the session, and the session read from the service's answers.
 * localStorage by default, so a reload or a second tab stays signed in; any object with the same
 * three methods can replace it (sessionStorage, an encrypted store, a React Native AsyncStorage
 * adapter, memory in tests).
 */
import { VaultError } from "./errors.ts";

export interface VaultStorage {
  getItem(key: string): string | null | Promise<string | null>;
  setItem(key: string, value: string): void | Promise<void>;
  removeItem(key: string): void | Promise<void>;
}

export interface VaultSession {
  readonly accessToken: string;
  readonly refreshToken: string;
  /**
   * When the access token expires, in epoch seconds of this device's clock (computed from the
   * server's `expires_in`, so a skewed clock does not make the client refresh too late).
   */
  readonly expiresAt: number;
  readonly user: { readonly id: string; readonly walletAddress: string };
  /**
   * The retry key of a refresh of `refreshToken` under way or failed: kept until the token is
   * replaced, so every later try, from any tab, is recognised by the service as a retry.
   */
  readonly retryKey?: string;
}

export function memoryStorage(): VaultStorage {
  const items = new Map<string, string>();
  return {
    getItem: (key) => items.get(key) ?? null,
    setItem: (key, value) => void items.set(key, value),
    removeItem: (key) => void items.delete(key),
  };
}

/** localStorage when the platform has a usable one (not in some private modes), else memory. */
export function defaultStorage(): VaultStorage {
  try {
    const local = (globalThis as { localStorage?: VaultStorage }).localStorage;
    if (local !== undefined) {
      const probe = "wallet-vault.probe";
      local.setItem(probe, probe);
      local.removeItem(probe);
      return local;
    }
  } catch {
    // Storage disabled: fall through to memory, the session then lasts as long as the page.
  }
  return memoryStorage();
}

export type SessionListener = (session: VaultSession | null) => void;

/** The fields of a browser's StorageEvent this module reads (Deno's types have no StorageEvent). */
interface StorageChange {
  readonly key: string | null;
  readonly newValue: string | null;
  readonly storageArea: unknown;
}

/** The session under one storage key, and who is told when it changes. */
export interface SessionStore {
  read(): Promise<VaultSession | null>;
  write(session: VaultSession | null): Promise<void>;
  /**
   * Forgets `ended` (the service said it has ended), unless another tab or call has stored a newer
   * session meanwhile: an answer about the old session must not sign the newer one out.
   */
  forget(ended: VaultSession): Promise<void>;
  /** Told of every change, this client's and, through the storage event, other tabs'. */
  onChange(listener: SessionListener): () => void;
  /**
   * Stores `next` in place of `expected` only if `expected` is still the stored session (the same
   * refresh token): false, storing nothing, when another tab or call signed in, out or refreshed.
   */
  replace(expected: VaultSession, next: VaultSession): Promise<boolean>;
  /**
   * `session` with the retry key of its token's refresh: made and stored first if it has none;
   * null when `session` is no longer the stored one.
   */
  withRetryKey(
    session: VaultSession,
  ): Promise<(VaultSession & { readonly retryKey: string }) | null>;
}

export function createSessionStore(storage: VaultStorage, key: string): SessionStore {
  const listeners = new Set<SessionListener>();
  const notify = (session: VaultSession | null) => {
    for (const listener of listeners) {
      try {
        listener(session);
      } catch {
        // A listener's bug must not break the client's own bookkeeping.
      }
    }
  };
  const read = async () => parseStoredSession(await storage.getItem(key));
  const write = async (session: VaultSession | null) => {
    if (session === null) await storage.removeItem(key);
    else await storage.setItem(key, JSON.stringify(session));
    notify(session);
  };

  // Another tab signed in, refreshed or signed out: a page showing this session must hear of it,
  // or it would go on showing one creator while its calls act as another. (localStorage only.)
  // Listened to only while someone listens here, so a client dropped is not kept alive by it.
  const fromOtherTabs = (event: Event) => {
    const { key: changed, newValue, storageArea } = event as Event & StorageChange;
    // A null key: the whole storage was cleared.
    if (storageArea !== storage || (changed !== key && changed !== null)) return;
    notify(parseStoredSession(changed === null ? null : newValue));
  };
  const events = globalThis as Partial<
    Pick<EventTarget, "addEventListener" | "removeEventListener">
  >;

  const replace = async (expected: VaultSession, next: VaultSession | null) => {
    const current = await read();
    if (current === null || current.refreshToken !== expected.refreshToken) return false;
    await write(next);
    return true;
  };

  return {
    read,
    write,
    async forget(ended) {
      await replace(ended, null);
    },
    replace,
    async withRetryKey(session) {
      if (session.retryKey !== undefined) return { ...session, retryKey: session.retryKey };
      const keyed = { ...session, retryKey: newRetryKey() };
      return await replace(session, keyed) ? keyed : null;
    },
    onChange(listener) {
      if (listeners.size === 0) events.addEventListener?.("storage", fromOtherTabs);
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
        if (listeners.size === 0) events.removeEventListener?.("storage", fromOtherTabs);
      };
    },
  };
}

/** 256 random bits as hex (older browsers have no toBase64), new for each token's refresh. */
function newRetryKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/**
 * What a refresh's first request sends in place of its retry key: the key's SHA-256, base64url
 * without padding. The key itself goes out only on a retry, so a copy of a request that spent the
 * token (a logged body) cannot pass for one. WebCrypto only: browsers give it to secure contexts
 * (https, localhost), the only pages the service admits.
 */
export async function retryKeyHash(retryKey: string): Promise<string> {
  const subtle = (globalThis as { crypto?: { subtle?: SubtleCrypto } }).crypto?.subtle;
  if (subtle === undefined) {
    throw new TypeError(
      "The vault client needs WebCrypto (crypto.subtle) to refresh a session, which browsers " +
        "give only to secure contexts: serve the page over https (or from localhost).",
    );
  }
  const digest = new Uint8Array(await subtle.digest("SHA-256", new TextEncoder().encode(retryKey)));
  let binary = "";
  for (const byte of digest) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** Reads a stored session, treating anything malformed as no session. */
export function parseStoredSession(text: string | null): VaultSession | null {
  if (text === null) return null;
  try {
    const value = JSON.parse(text) as Partial<VaultSession> | null;
    if (
      typeof value?.accessToken === "string" && typeof value.refreshToken === "string" &&
      typeof value.expiresAt === "number" && typeof value.user?.id === "string" &&
      typeof value.user.walletAddress === "string"
    ) {
      return value as VaultSession;
    }
  } catch {
    // Not JSON: someone else's data under our key.
  }
  return null;
}

/** The session in a sign-in or refresh answer; `nowMs` is this device's clock. */
export function sessionFromAnswer(body: unknown, nowMs: number): VaultSession {
  const b = body as {
    access_token?: unknown;
    refresh_token?: unknown;
    expires_in?: unknown;
    user?: { id?: unknown; wallet_address?: unknown };
  } | null;
  if (
    typeof b?.access_token !== "string" || typeof b.refresh_token !== "string" ||
    typeof b.expires_in !== "number" || typeof b.user?.id !== "string" ||
    typeof b.user.wallet_address !== "string"
  ) {
    throw new VaultError("invalid_response", "The service returned no session.");
  }
  return {
    accessToken: b.access_token,
    refreshToken: b.refresh_token,
    expiresAt: Math.floor(nowMs / 1000) + b.expires_in,
    user: { id: b.user.id, walletAddress: b.user.wallet_address },
  };
}
