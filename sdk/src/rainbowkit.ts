/**
 * RainbowKit's sign-in (its `AuthenticationAdapter`) on the wallet vault: RainbowKit shows the
 * "Sign message" step and asks the wallet for the signature; the vault's browser client gets the
 * service's message, exchanges the proof for a session and keeps it.
 *
 * ```tsx
 * const vault = createVaultClient({ baseUrl });
 * const adapter = createAuthenticationAdapter(vaultAuthenticationAdapter(vault));
 * <RainbowKitAuthenticationProvider adapter={adapter} status={status}>…
 * ```
 *
 * It imports nothing from RainbowKit: the adapter is the plain object RainbowKit's types describe
 * (restated below; a test type-checks it against the published package).
 */
import type { VaultClient } from "./browser.ts";
import { VaultError } from "./errors.ts";

/** RainbowKit's `AuthenticationStatus`. */
export type VaultAuthenticationStatus = "loading" | "unauthenticated" | "authenticated";

/** RainbowKit's `AuthenticationAdapter<string>`: the message is the EIP-4361 text. */
export interface VaultAuthenticationAdapter {
  readonly getNonce: () => Promise<string>;
  readonly createMessage: (
    args: { readonly nonce: string; readonly address: string; readonly chainId: number },
  ) => Promise<string>;
  readonly verify: (
    args: { readonly message: string; readonly signature: string },
  ) => Promise<boolean>;
  readonly signOut: () => Promise<void>;
}

export interface VaultAuthenticationOptions {
  /**
   * Told why a step failed (RainbowKit shows only a generic line): the VaultError, whose `code` is
   * the service's (`chain_not_allowed`, `nonce_expired`…) or the client's.
   */
  readonly onError?: (error: VaultError) => void;
}

/** The part of the browser client the adapters use. */
export type VaultSignInClient = Pick<
  VaultClient,
  "signInMessage" | "signInWithSignature" | "signOut"
>;

/**
 * The adapter for `createAuthenticationAdapter` (or RainbowKitAuthenticationProvider's `adapter`).
 *
 * RainbowKit asks for a nonce before it passes the address; the service binds its nonce to the
 * address and chain and builds the message itself (with the EIP-55 address), so the service's
 * nonce is fetched in `createMessage`, fresh for every try, and `getNonce` only hands RainbowKit a
 * token to start with.
 */
export function vaultAuthenticationAdapter(
  vault: VaultSignInClient,
  options: VaultAuthenticationOptions = {},
): VaultAuthenticationAdapter {
  const reported = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      if (error instanceof VaultError) options.onError?.(error);
      throw error;
    }
  };
  return {
    getNonce: () => Promise.resolve(randomToken()),
    createMessage: ({ address, chainId }) =>
      reported(async () => (await vault.signInMessage({ address, chainId })).message),
    verify: ({ message, signature }) =>
      reported(async () => {
        await vault.signInWithSignature({ message, signature });
        return true;
      }),
    signOut: async () => {
      await vault.signOut();
    },
  };
}

/**
 * RainbowKit's `status` prop from the vault's session: "loading" until the stored session is read,
 * then "authenticated" or "unauthenticated", on every change (this tab's and other tabs').
 * Returns the function that stops watching.
 */
export function watchAuthenticationStatus(
  vault: Pick<VaultClient, "getSession" | "onSessionChange">,
  onStatus: (status: VaultAuthenticationStatus) => void,
): () => void {
  let changed = false;
  const stop = vault.onSessionChange((session) => {
    changed = true;
    onStatus(session === null ? "unauthenticated" : "authenticated");
  });
  onStatus("loading");
  vault.getSession().then(
    // A change heard meanwhile is newer than this read.
    (session) => {
      if (!changed) onStatus(session === null ? "unauthenticated" : "authenticated");
    },
    () => {
      if (!changed) onStatus("unauthenticated");
    },
  );
  return stop;
}

/** 128 random bits as hex (crypto.randomUUID needs a secure context; a LAN dev page is not one). */
function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}
