/**
 * Reown AppKit's sign-in (SIWX, the `siwx` option of `createAppKit`) on the wallet vault: AppKit
 * shows its "Sign In" step and asks the wallet for the signature; the vault's browser client gets
 * the service's message, exchanges the proof for a session and keeps it.
 *
 * ```ts
 * const vault = createVaultClient({ baseUrl });
 * createAppKit({ adapters, networks, projectId, siwx: createVaultSiwx(vault) });
 * ```
 *
 * This is Reown's documented custom SIWX implementation: the `SIWXConfig` interface of
 * `@reown/appkit` as a plain object, not the `DefaultSIWX` class, because the service, not the
 * page, issues the nonce and builds the message. It imports nothing from Reown (the shapes are
 * restated below; a test type-checks them against the published packages).
 */
import type { VaultClient } from "./browser.ts";
import { VaultError } from "./errors.ts";
import { defaultStorage, type VaultStorage } from "./session-storage.ts";

/** A CAIP-2 chain id of an Ethereum chain, e.g. "eip155:1". */
export type Eip155ChainId = `eip155:${string}`;

/** AppKit's `SIWXMessage.Data` as this config fills it. */
export interface VaultSiwxMessageData {
  readonly accountAddress: string;
  readonly chainId: Eip155ChainId;
  readonly domain: string;
  readonly uri: string;
  readonly version: string;
  readonly nonce: string;
  readonly statement?: string;
  readonly issuedAt?: string;
  readonly expirationTime?: string;
}

/** AppKit's `SIWXMessage`: the data, and the service's EIP-4361 text as `toString()`. */
export interface VaultSiwxMessage extends VaultSiwxMessageData {
  readonly toString: () => string;
}

/** AppKit's `SIWXSession` as this config returns it. */
export interface VaultSiwxSession {
  readonly data: VaultSiwxMessageData;
  readonly message: string;
  readonly signature: string;
}

/** What this config reads of a session AppKit hands it. */
export interface SiwxSessionInput {
  readonly data: { readonly accountAddress: string; readonly chainId: string };
  readonly message: string;
  readonly signature: string;
}

/** AppKit's `SIWXConfig` (from `@reown/appkit`), as this config implements it. */
export interface VaultSiwxConfig {
  readonly createMessage: (
    input: { readonly accountAddress: string; readonly chainId: string },
  ) => Promise<VaultSiwxMessage>;
  readonly addSession: (session: SiwxSessionInput) => Promise<void>;
  readonly revokeSession: (chainId: string, address: string) => Promise<void>;
  readonly setSessions: (sessions: readonly SiwxSessionInput[]) => Promise<void>;
  readonly getSessions: (chainId: string, address: string) => Promise<VaultSiwxSession[]>;
  readonly getRequired: () => boolean;
}

export interface VaultSiwxOptions {
  /**
   * false: the wallet stays connected when the creator declines to sign (AppKit's `required`);
   * true by default.
   */
  readonly required?: boolean;
  /** Where the signed message is kept for AppKit (localStorage by default); not the session. */
  readonly storage?: VaultStorage;
  /** Storage key; by default one per API root. */
  readonly storageKey?: string;
}

/** The part of the browser client this config uses. */
export type VaultSiwxClient = Pick<
  VaultClient,
  "baseUrl" | "signInMessage" | "signInWithSignature" | "signOut" | "getSession"
>;

/** What is stored beside the vault's session: the session AppKit signed, and whose it is. */
interface StoredSiwx {
  readonly userId: string;
  readonly session: VaultSiwxSession;
}

export function createVaultSiwx(
  vault: VaultSiwxClient,
  options: VaultSiwxOptions = {},
): VaultSiwxConfig {
  const storage = options.storage ?? defaultStorage();
  const storageKey = options.storageKey ?? `wallet-vault.siwx:${vault.baseUrl}`;
  const required = options.required ?? true;

  async function readStored(): Promise<StoredSiwx | null> {
    try {
      const value = JSON.parse((await storage.getItem(storageKey)) ?? "null") as StoredSiwx | null;
      return typeof value?.userId === "string" && typeof value.session?.message === "string"
        ? value
        : null;
    } catch {
      return null;
    }
  }

  async function addSession(session: SiwxSessionInput): Promise<void> {
    eip155ChainNumber(session.data.chainId);
    const { message, signature } = session;
    const signedIn = await vault.signInWithSignature({ message, signature });
    const stored: StoredSiwx = {
      userId: signedIn.user.id,
      session: { data: siwxData(session.data), message, signature },
    };
    await storage.setItem(storageKey, JSON.stringify(stored));
  }

  async function signOut(): Promise<void> {
    await storage.removeItem(storageKey);
    await vault.signOut();
  }

  return {
    async createMessage({ accountAddress, chainId }) {
      const request = await vault.signInMessage({
        address: accountAddress,
        chainId: eip155ChainNumber(chainId),
      });
      const data: VaultSiwxMessageData = {
        accountAddress,
        chainId: `eip155:${request.chainId}`,
        domain: request.domain,
        uri: request.uri,
        version: request.version,
        nonce: request.nonce,
        statement: request.statement,
        issuedAt: request.issuedAt,
        expirationTime: request.expiresAt,
      };
      return { ...data, toString: () => request.message };
    },

    addSession,

    async revokeSession(_chainId, address) {
      // A session is the creator's on every chain: ending it for one chain ends it for all.
      const session = await vault.getSession();
      if (session !== null && sameAddress(session.user.walletAddress, address)) await signOut();
    },

    async setSessions(sessions) {
      if (sessions.length === 0) return await signOut();
      // The vault keeps one session: each is checked by the service, and the last one stays.
      for (const session of sessions) await addSession(session);
    },

    async getSessions(chainId, address) {
      const [session, stored] = await Promise.all([vault.getSession(), readStored()]);
      if (session === null || stored === null || stored.userId !== session.user.id) return [];
      const { data } = stored.session;
      return data.chainId === chainId && sameAddress(data.accountAddress, address) &&
          sameAddress(session.user.walletAddress, address)
        ? [stored.session]
        : [];
    },

    getRequired: () => required,
  };
}

/** The chain number of an "eip155:<n>" id; other namespaces cannot sign in to the vault. */
function eip155ChainNumber(chainId: string): number {
  const match = /^eip155:([1-9][0-9]*)$/.exec(chainId);
  const chain = match === null ? NaN : Number(match[1]);
  if (!Number.isSafeInteger(chain)) {
    throw new VaultError(
      "chain_not_allowed",
      `Only Ethereum accounts (eip155 chains) sign in to the vault, not ${chainId}.`,
    );
  }
  return chain;
}

/** The stored copy of AppKit's message data: its fields only (no toString). */
function siwxData(data: SiwxSessionInput["data"]): VaultSiwxMessageData {
  const d = data as Partial<VaultSiwxMessageData> & SiwxSessionInput["data"];
  return {
    accountAddress: d.accountAddress,
    chainId: d.chainId as Eip155ChainId,
    domain: d.domain ?? "",
    uri: d.uri ?? "",
    version: d.version ?? "1",
    nonce: d.nonce ?? "",
    ...(d.statement === undefined ? {} : { statement: d.statement }),
    ...(d.issuedAt === undefined ? {} : { issuedAt: d.issuedAt }),
    ...(d.expirationTime === undefined ? {} : { expirationTime: d.expirationTime }),
  };
}

function sameAddress(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}
