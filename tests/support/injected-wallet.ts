/**
 * An EIP-1193 wallet injected into a browser context's pages: `window.ethereum`, and an EIP-6963
 * announcement unless told otherwise, answering from this Deno process with a real private key.
 */
import type { BrowserContext } from "playwright-core";
import { hexToString, toHex } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";

export interface InjectedWallet {
  readonly account: PrivateKeyAccount;
  /** Every message the pages asked the wallet to sign, as text. */
  readonly signed: string[];
}

type WalletAnswer = { result: unknown } | { error: { code: number; message: string } };

export interface WalletOptions {
  readonly chainId?: number;
  /** Answer personal_sign with EIP-1193 error 4001, as a user pressing "Reject" does. */
  readonly rejectSignatures?: boolean;
  /** Accounts in lower case, as MetaMask returns them: the code under test must checksum them. */
  readonly lowerCase?: boolean;
  /** No account from eth_accounts until eth_requestAccounts, as before a site is connected. */
  readonly connectFirst?: boolean;
  /** Announce through EIP-6963 as well as set `window.ethereum`. */
  readonly announce?: boolean;
}

/** Installs the wallet in every page `context` opens from now on. */
export async function injectWallet(
  context: BrowserContext,
  account: PrivateKeyAccount,
  options: WalletOptions = {},
): Promise<InjectedWallet> {
  const { chainId = 1, rejectSignatures = false, lowerCase = false } = options;
  const wallet: InjectedWallet = { account, signed: [] };
  const address = lowerCase ? account.address.toLowerCase() : account.address;
  let connected = !options.connectFirst;
  await context.exposeFunction(
    "__injectedWallet",
    async (method: string, params: unknown[]): Promise<WalletAnswer> => {
      switch (method) {
        case "eth_requestAccounts":
          connected = true;
          return { result: [address] };
        case "eth_accounts":
          return { result: connected ? [address] : [] };
        case "eth_chainId":
          return { result: toHex(chainId) };
        case "personal_sign": {
          if (rejectSignatures) {
            return { error: { code: 4001, message: "User rejected the request." } };
          }
          const [data, signer] = params as [`0x${string}`, string];
          if (signer.toLowerCase() !== account.address.toLowerCase()) {
            return { error: { code: 4100, message: "Unknown account." } };
          }
          wallet.signed.push(hexToString(data));
          return { result: await account.signMessage({ message: { raw: data } }) };
        }
        default:
          return { error: { code: 4200, message: `Unsupported method ${method}.` } };
      }
    },
  );
  await context.addInitScript(walletScript(options.announce ?? true));
  return wallet;
}

const walletScript = (announce: boolean) =>
  `(() => {
  const listeners = new Map();
  const provider = {
    async request({ method, params }) {
      const answer = await window.__injectedWallet(method, params ?? []);
      if ("error" in answer) {
        const error = new Error(answer.error.message);
        error.code = answer.error.code;
        throw error;
      }
      return answer.result;
    },
    on(event, listener) {
      listeners.set(listener, event);
    },
    removeListener(event, listener) {
      listeners.delete(listener);
    },
  };
  const info = Object.freeze({
    uuid: "5f0d8a1e-3c2b-4e7a-9a61-7d2c8b4e1f30",
    name: "Injected Test Wallet",
    icon: "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'/%3E",
    rdns: "org.example.injected-test-wallet",
  });
  const announce = () => window.dispatchEvent(
    new CustomEvent("eip6963:announceProvider", { detail: Object.freeze({ info, provider }) }),
  );
  window.ethereum = provider;
  if (${announce}) {
    window.addEventListener("eip6963:requestProvider", announce);
    announce();
  }
})();`;
