/**
 * The creator controls of the browser client, as `vault.controls`: the activity (what happened to
 * the keys, and when a live run last read them), the live sessions and signing them out, the kill
 * switch for live-run access, and leaving (export, delete the account).
 *
 * Unlocking, signing sessions out and deleting the account take a fresh wallet signature, so a
 * stolen session alone cannot do them: the client asks the service for a nonce for that act, checks
 * the EIP-4361 message that comes with it against the answer's fields and the signed-in wallet,
 * has the wallet sign it (EIP-191 personal_sign, as at sign-in) and sends it with the act.
 *
 * Erasable TypeScript only: the local server serves it to browsers as is.
 */
import { type Eip1193Provider, personalSign, requestAccount, walletFailure } from "./eip1193.ts";
import { VaultError } from "./errors.ts";
import { notSignedIn } from "./session-refresh.ts";
import type { VaultSession } from "./session-storage.ts";
import { signInMessageMismatch } from "./sign-in-message.ts";
import type {
  AccountDeleteResult,
  AccountExport,
  ActivityPage,
  ConfirmPurpose,
  FreshSignatureRequest,
  LockState,
  SessionsList,
  SignOutSessionsResult,
  UnlockResult,
} from "./types.ts";

/**
 * Who signs a fresh signature: the creator's EIP-1193 wallet (its account must be the signed-in
 * one), or a function that has the message signed and returns the signature (a wallet kit's
 * `signMessage`, e.g. wagmi's `({ message }) => signMessageAsync({ message })`).
 */
export type FreshSigner =
  | Eip1193Provider
  | ((request: FreshSignatureRequest) => Promise<string>);

export interface ActivityOptions {
  /** Events per page, 1 to 200 (the service's default is 50). */
  readonly limit?: number | undefined;
  /** The previous page's `nextCursor`; left out (or null) for the newest events. */
  readonly cursor?: string | null | undefined;
}

export interface CreatorControls {
  /** A page of the creator's activity, newest first; `nextCursor` reads the next, older one. */
  activity(options?: ActivityOptions): Promise<ActivityPage>;
  /** The creator's live sessions, newest first; `current` marks this client's. */
  listSessions(): Promise<SessionsList>;
  /**
   * Ends the named sessions (any of the creator's, this one too; up to 50) after a fresh signature
   * over a message that lists them, checked here before it is signed. When this client's session
   * is among them, it is forgotten here as after signOut().
   */
  signOutSessions(
    signer: FreshSigner,
    sessionIds: readonly string[],
  ): Promise<SignOutSessionsResult>;
  /** Whether live runs' reveals of the creator's keys are refused. */
  lockState(): Promise<LockState>;
  /**
   * Locks live-run access at once, with the session alone: every reveal is refused (423
   * `vault_locked`) until unlock(). It cannot recall a value already revealed: rotate that key at
   * its provider.
   */
  lock(): Promise<LockState>;
  /** Lets live runs reveal again, after a fresh signature (a stolen session cannot unlock). */
  unlock(signer: FreshSigner): Promise<UnlockResult>;
  /** The creator's masked metadata and activity, to keep (never a value). */
  exportAccount(): Promise<AccountExport>;
  /**
   * Deletes the account after a fresh signature: every key, every session (this one is forgotten
   * here) and the wallet's link; a later sign-in with the wallet is a new creator.
   */
  deleteAccount(signer: FreshSigner): Promise<AccountDeleteResult>;
}

/** What the browser client lends its controls. */
export interface CreatorControlsDeps {
  /** A call with the session, refreshed as needed; an ended session is forgotten. */
  readonly authed: <T>(
    method: "GET" | "POST" | "DELETE",
    path: string,
    body?: unknown,
  ) => Promise<T>;
  readonly readSession: () => Promise<VaultSession | null>;
  /** Forgets `ended`, unless a newer session was stored meanwhile. */
  readonly forget: (ended: VaultSession) => Promise<void>;
}

type Proof = { readonly message: string; readonly signature: string };

export function createCreatorControls(deps: CreatorControlsDeps): CreatorControls {
  const { authed, readSession, forget } = deps;

  /** Asks the nonce for `purpose`, has `signer` sign its message, and does `act` with the proof. */
  async function withFreshSignature<T>(
    purpose: ConfirmPurpose,
    signer: FreshSigner,
    act: (proof: Proof) => Promise<T>,
    sessionIds?: readonly string[],
  ): Promise<T> {
    const session = await readSession();
    if (session === null) throw notSignedIn();
    const wallet = session.user.walletAddress;
    let account: string | null = null;
    if (typeof signer !== "function") {
      try {
        account = await requestAccount(signer);
      } catch (error) {
        throw walletFailure(error, "connect");
      }
      // Checked before a nonce is spent on it: the service would refuse another wallet's signature.
      if (account.toLowerCase() !== wallet.toLowerCase()) {
        throw new VaultError(
          "wallet_error",
          `The wallet's account is ${account}, not the signed-in ${wallet}: switch accounts in ` +
            "the wallet, then try again.",
        );
      }
    }
    const request = await authed<FreshSignatureRequest>(
      "POST",
      "/auth/confirm/nonce",
      sessionIds === undefined ? { purpose } : { purpose, sessionIds },
    );
    const message = request?.message;
    const mismatch = typeof message !== "string"
      ? "message"
      : request.purpose !== purpose
      ? "purpose"
      : signInMessageMismatch(message, { nonce: request, address: wallet }) ??
        (sessionIds !== undefined && !listsExactly(message, sessionResources(sessionIds))
          ? "resources"
          : null);
    if (mismatch !== null) {
      throw new VaultError(
        "message_mismatch",
        `The message to sign does not match (${mismatch}); nothing was signed.`,
      );
    }
    let signature: unknown;
    try {
      signature = account === null
        ? await (signer as (request: FreshSignatureRequest) => Promise<string>)(request)
        : await personalSign(signer as Eip1193Provider, message, account);
    } catch (error) {
      throw error instanceof VaultError
        ? error
        : walletFailure(error, "sign", "You declined to sign in your wallet; nothing was done.");
    }
    if (typeof signature !== "string") {
      throw new VaultError("wallet_error", "The wallet returned no signature.");
    }
    return await act({ message, signature });
  }

  /** Forgets the stored session when `ended` says the act ended it. */
  async function forgetIf(ended: (session: VaultSession) => boolean): Promise<void> {
    const stored = await readSession();
    if (stored !== null && ended(stored)) await forget(stored);
  }

  return {
    activity(options = {}) {
      const query = new URLSearchParams();
      if (options.limit !== undefined) query.set("limit", String(options.limit));
      if (options.cursor !== undefined && options.cursor !== null) {
        query.set("cursor", options.cursor);
      }
      const search = query.toString();
      return authed<ActivityPage>("GET", `/secrets/activity${search === "" ? "" : `?${search}`}`);
    },
    listSessions: () => authed<SessionsList>("GET", "/auth/sessions"),
    async signOutSessions(signer, sessionIds) {
      const ids = [...sessionIds];
      const result = await withFreshSignature(
        "sign_out_sessions",
        signer,
        (proof) =>
          authed<SignOutSessionsResult>("POST", "/auth/sessions/sign-out", {
            ...proof,
            sessionIds: ids,
          }),
        ids,
      );
      const ended = new Set(ids.map((id) => id.toLowerCase()));
      await forgetIf((session) => ended.has(sessionIdOf(session.accessToken) ?? ""));
      return result;
    },
    lockState: () => authed<LockState>("GET", "/secrets/lock"),
    lock: () => authed<LockState>("POST", "/secrets/lock"),
    unlock: (signer) =>
      withFreshSignature(
        "unlock",
        signer,
        (proof) => authed<UnlockResult>("POST", "/secrets/unlock", proof),
      ),
    exportAccount: () => authed<AccountExport>("GET", "/account/export"),
    async deleteAccount(signer) {
      const userId = (await readSession())?.user.id;
      const result = await withFreshSignature(
        "delete_account",
        signer,
        (proof) => authed<AccountDeleteResult>("DELETE", "/account", proof),
      );
      // Every session of the deleted creator has ended; another creator's (another tab) stays.
      await forgetIf((session) => session.user.id === userId);
      return result;
    },
  };
}

/** The access token's `session_id` claim (the sessions list's `id`); null if unreadable. */
function sessionIdOf(accessToken: string): string | null {
  try {
    const payload = accessToken.split(".")[1].replaceAll("-", "+").replaceAll("_", "/");
    const id = (JSON.parse(atob(payload)) as { session_id?: unknown }).session_id;
    return typeof id === "string" ? id.toLowerCase() : null;
  } catch {
    return null;
  }
}

/** The resources a sign-out message lists: one `urn:uuid:<id>` per session, lower case, each once. */
function sessionResources(sessionIds: readonly string[]): string[] {
  return [...new Set(sessionIds.map((id) => `urn:uuid:${id.toLowerCase()}`))];
}

/** Whether the message's EIP-4361 resources are exactly `resources`, in that order. */
function listsExactly(message: string, resources: readonly string[]): boolean {
  const lines = message.split("\n");
  const start = lines.indexOf("Resources:");
  const listed = start === -1 ? [] : lines.slice(start + 1);
  return listed.length === resources.length &&
    listed.every((line, i) => line === `- ${resources[i]}`);
}
