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
import {
  type Eip1193Provider,
  personalSign,
  requestAccount,
  requestChainId,
  walletFailure,
} from "./eip1193.ts";
import { createCreatorControls, type CreatorControls } from "./creator-controls.ts";
import { VaultError } from "./errors.ts";
import { createServiceCall } from "./service-call.ts";
import { createSessionRefresh } from "./session-refresh.ts";
import {
  createSessionStore,
  defaultStorage,
  sessionFromAnswer,
  type SessionListener,
  type VaultSession,
  type VaultStorage,
} from "./session-storage.ts";
import { type NonceResponse, signInMessageMismatch } from "./sign-in-message.ts";
import type { DeleteResult, SaveResult, SecretsStatus, SecretType } from "./types.ts";

export type { ActivityOptions, CreatorControls, FreshSigner } from "./creator-controls.ts";
export { discoverWallets } from "./eip1193.ts";
export type { DiscoveredWallet, Eip1193Provider, Eip6963ProviderInfo } from "./eip1193.ts";
export { SignatureRejectedError, VaultError } from "./errors.ts";
export type { ClientErrorCode, VaultErrorCode } from "./errors.ts";
export { memoryStorage } from "./session-storage.ts";
export type { SessionListener, VaultSession, VaultStorage } from "./session-storage.ts";
export type * from "./types.ts";
export type { NonceResponse } from "./sign-in-message.ts";

/** The service's nonce answer for one account and chain, with the message to sign. */
export type SignInRequest = NonceResponse & { readonly message: string };

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
  /**
   * Per call, including reading the answer (default 10 s, at most 60 s). It also bounds how long a
   * refresh holds the cross-tab lock, so one unanswered request cannot stall every tab (sign-out
   * included); a refresh's two tries must fit the service's retry grace (two minutes).
   */
  readonly timeoutMs?: number;
  /** The clock, in milliseconds (tests). */
  readonly now?: () => number;
}

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
   * signIn's first half, for a wallet kit that asks the wallet itself (RainbowKit, AppKit): the
   * service's EIP-4361 message for this account and chain (its nonce bound to both), checked
   * against the nonce answer and the address as signIn checks it.
   */
  signInMessage(
    account: { readonly address: string; readonly chainId: number },
  ): Promise<SignInRequest>;
  /** signIn's second half: the signed message exchanged for a session, which is stored. */
  signInWithSignature(
    proof: { readonly message: string; readonly signature: string },
  ): Promise<VaultSession>;
  /**
   * The session's access token, refreshed first when it is about to expire; null when signed out.
   * What supabase-js's `accessToken` option wants: `createClient(url, key, { accessToken:
   * vault.accessToken })`. Throws the VaultError of a refresh that failed.
   */
  accessToken(): Promise<string | null>;
  /**
   * Scope "local" (the default): revokes this session on the server (best effort) and forgets it
   * here. Scope "global": revokes every session of this wallet's creator, on every device (after
   * losing one); that is no best effort: it throws a VaultError when the service did not confirm
   * it, and keeps this session unless the service says it has ended, so the creator can retry.
   */
  signOut(options?: SignOutOptions): Promise<{ readonly revokedOnServer: boolean }>;
  /** The stored session, without touching the network; null when signed out. */
  getSession(): Promise<VaultSession | null>;
  /**
   * Notified on sign-in, refresh, sign-out and when the service ends the session, whether this
   * client or another tab's (through the storage event, when the session is in localStorage).
   */
  onSessionChange(listener: SessionListener): () => void;
  /** Configuration status only, without a session. */
  status(): Promise<SecretsStatus>;
  /** The signed-in creator's masked entries. */
  listSecrets(): Promise<SecretsStatus>;
  /** Creates or replaces the creator's key of this type. The value is never sent back. */
  saveSecret(secretType: SecretType, value: string): Promise<SaveResult>;
  deleteSecret(secretType: SecretType): Promise<DeleteResult>;
  /** Activity, sessions, the live-run lock, export and account deletion (creator-controls.ts). */
  readonly controls: CreatorControls;
}

// ---------------------------------------------------------------------------------------------

export function createVaultClient(options: VaultClientOptions): VaultClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  const storage = options.storage ?? defaultStorage();
  const storageKey = options.storageKey ?? `wallet-vault.session:${baseUrl}`;
  const now = options.now ?? Date.now;
  const sessions = createSessionStore(storage, storageKey);
  const readSession = sessions.read;
  const writeSession = sessions.write;
  const toSession = (body: unknown) => sessionFromAnswer(body, now());

  const call = createServiceCall({
    baseUrl,
    fetch: options.fetch,
    apiKey: options.apiKey,
    timeoutMs: options.timeoutMs,
  });

  const { authed, needsRefresh, refresh } = createSessionRefresh({
    call,
    sessions,
    storageKey,
    now,
    marginSeconds: options.refreshMarginSeconds ?? 60,
  });

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
    const { message } = await signInMessage({ address, chainId });
    let signature: string;
    try {
      signature = await personalSign(provider, message, address);
    } catch (error) {
      throw walletFailure(error, "sign");
    }
    return await signInWithSignature({ message, signature });
  }

  async function signInMessage(
    account: { readonly address: string; readonly chainId: number },
  ): Promise<SignInRequest> {
    const { address, chainId } = account;
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
    return { ...nonce, message };
  }

  async function signInWithSignature(
    proof: { readonly message: string; readonly signature: string },
  ): Promise<VaultSession> {
    const { message, signature } = proof;
    const session = toSession(
      await call("POST", "/auth/wallet-proof", { body: { message, signature } }),
    );
    await writeSession(session);
    return session;
  }

  async function accessToken(): Promise<string | null> {
    const session = await readSession();
    if (session === null) return null;
    try {
      return (needsRefresh(session) ? await refresh(session) : session).accessToken;
    } catch (error) {
      // Signed out meanwhile (another tab): no session, as supabase-js expects it said.
      if (error instanceof VaultError && error.code === "not_signed_in") return null;
      throw error;
    }
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
      // Offline or already ended: forgetting the session here is what the creator asked for.
    } finally {
      await writeSession(null);
    }
    return { revokedOnServer };
  }

  return {
    baseUrl,
    signIn,
    signInMessage,
    signInWithSignature,
    accessToken,
    signOut,
    getSession: readSession,
    onSessionChange: sessions.onChange,
    status: () => call<SecretsStatus>("GET", "/secrets"),
    listSecrets: () => authed<SecretsStatus>("GET", "/secrets"),
    saveSecret: (secretType, value) => authed<SaveResult>("PUT", "/secrets", { secretType, value }),
    deleteSecret: (secretType) => authed<DeleteResult>("DELETE", "/secrets", { secretType }),
    controls: createCreatorControls({ authed, readSession, forget: sessions.forget }),
  };
}
