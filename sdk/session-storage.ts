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
