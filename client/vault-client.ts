/**
 * The browser client of the wallet vault: wallet sign-in, the session (stored, refreshed before it
 * expires, revoked on sign-out) and the creator's provider keys. No framework, no dependencies.
 *
 * `baseUrl` is the API root and the only setting that differs between environments:
 *   local server      http://127.0.0.1:54321/api
 *   Supabase project  https://<ref>.supabase.co/functions/v1/api
 * Below it the paths are the same: /auth/nonce, /auth/wallet-proof, /auth/refresh, /auth/logout
 * and /secrets.
 *
 * Written in erasable TypeScript only: the local server strips the types and serves it as an ES
 * module at /client/vault-client.js.
 */
import type { ErrorCode } from "../functions/_shared/errors.ts";
import type { ProviderReadiness } from "../functions/_shared/provider-routing.ts";
import type { ProviderId, SecretType, StepKind } from "../functions/_shared/secret-types.ts";
import {
  type Eip1193Provider,
  personalSign,
  providerErrorCode,
  requestAccount,
  requestChainId,
  USER_REJECTED_REQUEST,
} from "./eip1193.ts";
import {
  defaultStorage,
  parseStoredSession,
  type VaultSession,
  type VaultStorage,
} from "./session-storage.ts";
import { type NonceResponse, signInMessageMismatch } from "./sign-in-message.ts";

export { discoverWallets } from "./eip1193.ts";
export type { DiscoveredWallet, Eip1193Provider, Eip6963ProviderInfo } from "./eip1193.ts";
export { memoryStorage } from "./session-storage.ts";
export type { VaultSession, VaultStorage } from "./session-storage.ts";
export type { ErrorCode, ProviderId, ProviderReadiness, SecretType, StepKind };

// ---------------------------------------------------------------------------------------------
// Errors

/** Failures that happen in the client, before or instead of a service answer. */
export type ClientErrorCode =
  /** The wallet refused (EIP-1193 4001): the user declined to connect or to sign. */
  | "signature_rejected"
  /** The wallet failed otherwise (locked, no account, unsupported method…). */
  | "wallet_error"
  /** The server's sign-in message does not match its own nonce answer or the account. */
  | "message_mismatch"
  /** An operation that needs a session was called without one. */
  | "not_signed_in"
  /** The service could not be reached (offline, DNS, CORS refusal). */
  | "network_error"
  /** The service answered something that is not its JSON. */
  | "invalid_response";

export type VaultErrorCode = ErrorCode | ClientErrorCode;

export class VaultError extends Error {
  /** The service's stable error code, or one of the client's own. */
  readonly code: VaultErrorCode;
  /** HTTP status when the service answered, else null. */
  readonly status: number | null;
  /** Extra non-secret fields of the service's error (e.g. allowedChainIds). */
  readonly details: Readonly<Record<string, unknown>>;

  constructor(
    code: VaultErrorCode,
    message: string,
    options: { status?: number | null; details?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "VaultError";
    this.code = code;
    this.status = options.status ?? null;
    this.details = options.details ?? {};
  }
}

/** The user declined in the wallet: a normal outcome to show, not a crash. */
export class SignatureRejectedError extends VaultError {
  /** Whether the user declined connecting the wallet or signing the message. */
  readonly step: "connect" | "sign";

  constructor(step: "connect" | "sign", cause?: unknown) {
    super(
      "signature_rejected",
      step === "sign"
        ? "You declined to sign the sign-in message in your wallet."
        : "You declined to connect your wallet.",
      { cause },
    );
    this.name = "SignatureRejectedError";
    this.step = step;
  }
}

// Codes after which the stored session is useless: it is forgotten rather than retried forever.
const SESSION_ENDED = new Set<VaultErrorCode>([
  "invalid_token",
  "session_revoked",
  "invalid_refresh_token",
  "refresh_token_reused",
]);

// ---------------------------------------------------------------------------------------------
// Service shapes

export interface MaskedSecret {
  readonly secretType: SecretType;
  /** ISO 8601 UTC. */
  readonly updatedAt: string;
  /** A short non-secret reminder of which key this is, when the service keeps one. */
  readonly hint?: string;
}

/** The body of `GET /secrets`. Without a session, `secrets` is empty. */
export interface SecretsStatus {
  readonly configured: boolean;
  readonly project: string;
  readonly storage: string;
  readonly secretTypes: readonly SecretType[];
  readonly secrets: readonly MaskedSecret[];
  /** Per provider: ready, or which types are missing (with a session, on services reporting it). */
  readonly providers?: readonly ProviderReadiness[];
}

export interface SaveResult {
  readonly secretType: SecretType;
  readonly updatedAt: string;
  /** false when an existing key of this type was replaced. */
  readonly created: boolean;
}

export interface DeleteResult {
  readonly secretType: SecretType;
  readonly deleted: true;
}

export interface VaultClientOptions {
  /** The API root, e.g. http://127.0.0.1:54321/api or https://<ref>.supabase.co/functions/v1/api. */
  readonly baseUrl: string;
  /** Where the session is kept; localStorage by default. */
  readonly storage?: VaultStorage;
  /** Storage key; by default one per baseUrl, so two backends never share a session. */
  readonly storageKey?: string;
  /** A Supabase anon or publishable key, sent as `apikey` when the project's gateway wants one. */
  readonly apiKey?: string;
  /** Refresh this many seconds before the access token expires (default 60). */
  readonly refreshMarginSeconds?: number;
  readonly fetch?: typeof fetch;
  /** The clock, in milliseconds (tests). */
  readonly now?: () => number;
}

export type SessionListener = (session: VaultSession | null) => void;

export interface SignOutOptions {
  /** "local": this session (default); "global": every session of the creator, as Supabase Auth. */
  readonly scope?: "local" | "global";
}

export interface VaultClient {
  readonly baseUrl: string;
  /**
   * Connects the wallet, asks it to sign the server's EIP-4361 message and exchanges the proof
   * for a session. A refusal in the wallet throws SignatureRejectedError.
   */
  signIn(provider: Eip1193Provider): Promise<VaultSession>;
  /**
   * Scope "local" (the default): revokes this session on the server (best effort) and forgets it
   * here. Scope "global": revokes every session of this wallet's creator, on every device (after
   * losing one); that is no best effort: it throws a VaultError when the service did not confirm
   * it, and keeps this session unless the service says it has ended, so the user can retry.
   */
  signOut(options?: SignOutOptions): Promise<{ readonly revokedOnServer: boolean }>;
  /** The stored session, without touching the network; null when signed out. */
  getSession(): Promise<VaultSession | null>;
  /** Notified on sign-in, refresh, sign-out and when the service ends the session. */
  onSessionChange(listener: SessionListener): () => void;
  /** Configuration status only, without a session. */
  status(): Promise<SecretsStatus>;
  /** The signed-in creator's masked entries. */
  listSecrets(): Promise<SecretsStatus>;
  /** Creates or replaces the creator's key of this type. The value is never sent back. */
  saveSecret(secretType: SecretType, value: string): Promise<SaveResult>;
  deleteSecret(secretType: SecretType): Promise<DeleteResult>;
}

// ---------------------------------------------------------------------------------------------

interface LockManager {
  request<T>(name: string, callback: () => Promise<T>): Promise<T>;
}

export function createVaultClient(options: VaultClientOptions): VaultClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  const storage = options.storage ?? defaultStorage();
  const storageKey = options.storageKey ?? `wallet-vault.session:${baseUrl}`;
  const fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
  const now = options.now ?? Date.now;
  const marginSeconds = options.refreshMarginSeconds ?? 60;
  const listeners = new Set<SessionListener>();
  let refreshing: Promise<VaultSession> | null = null;

  async function call<T>(
    method: "GET" | "POST" | "PUT" | "DELETE",
    path: string,
    init: { body?: unknown; accessToken?: string } = {},
  ): Promise<T> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (init.body !== undefined) headers["content-type"] = "application/json";
    if (init.accessToken !== undefined) headers.authorization = `Bearer ${init.accessToken}`;
    if (options.apiKey) headers.apikey = options.apiKey;
    let response: Response;
    try {
      response = await fetchImpl(`${baseUrl}${path}`, {
        method,
        headers,
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
        credentials: "omit",
        cache: "no-store",
      });
    } catch (cause) {
      throw new VaultError("network_error", "The vault service could not be reached.", { cause });
    }
    if (response.status === 204) return undefined as T;
    let body: unknown;
    try {
      body = await response.json();
    } catch (cause) {
      throw new VaultError("invalid_response", `The service answered ${response.status}.`, {
        status: response.status,
        cause,
      });
    }
    if (!response.ok) {
      const error = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
      if (typeof error?.code !== "string") {
        throw new VaultError("invalid_response", `The service answered ${response.status}.`, {
          status: response.status,
        });
      }
      const { code, message, ...details } = error as Record<string, unknown>;
      throw new VaultError(
        code as VaultErrorCode,
        typeof message === "string" ? message : code as string,
        { status: response.status, details },
      );
    }
    return body as T;
  }

  // --- session ---------------------------------------------------------------------------------

  async function readSession(): Promise<VaultSession | null> {
    return parseStoredSession(await storage.getItem(storageKey));
  }

  async function writeSession(session: VaultSession | null): Promise<void> {
    if (session === null) await storage.removeItem(storageKey);
    else await storage.setItem(storageKey, JSON.stringify(session));
    for (const listener of listeners) {
      try {
        listener(session);
      } catch {
        // A listener's bug must not break the client's own bookkeeping.
      }
    }
  }

  function toSession(body: unknown): VaultSession {
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
      expiresAt: Math.floor(now() / 1000) + b.expires_in,
      user: { id: b.user.id, walletAddress: b.user.wallet_address },
    };
  }

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
      if (current.refreshToken !== stale.refreshToken && !needsRefresh(current)) return current;
      try {
        const next = toSession(
          await call("POST", "/auth/refresh", { body: { refresh_token: current.refreshToken } }),
        );
        await writeSession(next);
        return next;
      } catch (error) {
        if (error instanceof VaultError && SESSION_ENDED.has(error.code)) await writeSession(null);
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
        if (SESSION_ENDED.has(error.code)) await writeSession(null);
        throw error;
      }
    }
  }

  // --- the API ---------------------------------------------------------------------------------

  async function signIn(provider: Eip1193Provider): Promise<VaultSession> {
    let address: `0x${string}`;
    let chainId: number;
    try {
      address = await requestAccount(provider);
      chainId = await requestChainId(provider);
    } catch (error) {
      throw walletFailure(error, "connect");
    }
    const nonce = await call<NonceResponse>("POST", "/auth/nonce", { body: { address, chainId } });
    const message = nonce?.message;
    if (typeof message !== "string") {
      throw new VaultError("invalid_response", "The service returned no sign-in message.");
    }
    const mismatch = signInMessageMismatch(message, { nonce, address });
    if (mismatch !== null) {
      throw new VaultError(
        "message_mismatch",
        `The sign-in message does not match (${mismatch}); nothing was signed.`,
      );
    }
    let signature: string;
    try {
      signature = await personalSign(provider, message, address);
    } catch (error) {
      throw walletFailure(error, "sign");
    }
    const session = toSession(
      await call("POST", "/auth/wallet-proof", { body: { message, signature } }),
    );
    await writeSession(session);
    return session;
  }

  async function signOut(options: SignOutOptions = {}): Promise<{ revokedOnServer: boolean }> {
    if (options.scope === "global") {
      // authed() forgets the session itself when the service says it has already ended.
      await authed("POST", "/auth/logout", { scope: "global" });
      await writeSession(null);
      return { revokedOnServer: true };
    }
    let revokedOnServer = false;
    try {
      if ((await readSession()) !== null) {
        await authed("POST", "/auth/logout");
        revokedOnServer = true;
      }
    } catch {
      // Offline or already ended: forgetting the session here is what the user asked for.
    } finally {
      await writeSession(null);
    }
    return { revokedOnServer };
  }

  return {
    baseUrl,
    signIn,
    signOut,
    getSession: readSession,
    onSessionChange(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    status: () => call<SecretsStatus>("GET", "/secrets"),
    listSecrets: () => authed<SecretsStatus>("GET", "/secrets"),
    saveSecret: (secretType, value) => authed<SaveResult>("PUT", "/secrets", { secretType, value }),
    deleteSecret: (secretType) => authed<DeleteResult>("DELETE", "/secrets", { secretType }),
  };
}

function notSignedIn(): VaultError {
  return new VaultError("not_signed_in", "Sign in with your wallet first.");
}

function walletFailure(error: unknown, step: "connect" | "sign"): VaultError {
  if (providerErrorCode(error) === USER_REJECTED_REQUEST) {
    return new SignatureRejectedError(step, error);
  }
  const reason = (error as { message?: unknown } | null)?.message;
  return new VaultError(
    "wallet_error",
    typeof reason === "string" && reason !== "" ? reason : "The wallet could not complete this.",
    { cause: error },
  );
}
