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
 * What a refresh's first try sends in place of its retry key: the key's SHA-256, base64url without
 * padding. The key itself goes out only on a retry, so a copy of the first request (a logged body)
 * cannot pass for one. WebCrypto where there is one: a page on an insecure origin (http:// other
 * than localhost) has no crypto.subtle, and neither have some embedded runtimes.
 */
export async function retryKeyHash(retryKey: string): Promise<string> {
  const text = new TextEncoder().encode(retryKey);
  const subtle = (globalThis as { crypto?: { subtle?: SubtleCrypto } }).crypto?.subtle;
  const digest = subtle === undefined
    ? sha256InJavaScript(text)
    : new Uint8Array(await subtle.digest("SHA-256", text));
  let binary = "";
  for (const byte of digest) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

// SHA-256's round constants (FIPS 180-4, 4.2.2).
// deno-fmt-ignore
const K = [
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

// Its initial hash value (5.3.3).
// deno-fmt-ignore
const H0 = [
  0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

const rotr = (x: number, n: number) => (x >>> n) | (x << (32 - n));

/** SHA-256 (FIPS 180-4) of a message under 512 MB, for runtimes without WebCrypto. */
export function sha256InJavaScript(message: Uint8Array): Uint8Array {
  // The message, a 1 bit, zeros, and its length in bits (64-bit big-endian): 64-byte blocks.
  const padded = new Uint8Array(((message.length + 72) >> 6) << 6);
  padded.set(message);
  padded[message.length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 4, message.length * 8);
  const h = [...H0];
  const w = new Uint32Array(64);
  for (let block = 0; block < padded.length; block += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(block + 4 * i);
    for (let i = 16; i < 64; i++) {
      const s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >>> 3);
      const s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >>> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    let [a, b, c, d, e, f, g, hh] = h;
    for (let i = 0; i < 64; i++) {
      const sigma1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      const t1 = (hh + sigma1 + ((e & f) ^ (~e & g)) + K[i] + w[i]) | 0;
      const sigma0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      const t2 = (sigma0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      [hh, g, f, e, d, c, b, a] = [g, f, e, (d + t1) | 0, c, b, a, (t1 + t2) | 0];
    }
    [a, b, c, d, e, f, g, hh].forEach((value, i) => h[i] = (h[i] + value) | 0);
  }
  const digest = new Uint8Array(32);
  const out = new DataView(digest.buffer);
  h.forEach((value, i) => out.setUint32(4 * i, value >>> 0));
  return digest;
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
