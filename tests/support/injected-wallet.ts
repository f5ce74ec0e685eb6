/**
 * Headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core; no browser is ever
 * downloaded) with an EIP-1193 wallet injected into a context's pages: `window.ethereum` plus an
 * EIP-6963 announcement, answering from this Deno process with a real private key.
 */
import type { BrowserContext } from "playwright-core";
import { hexToString, toHex } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";

export const CHROMIUM = "/usr/bin/chromium";
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--no-first-run",
  "--disable-sync",
  "--disable-quic",
  "--disable-dev-shm-usage",
];

/** Whether Chromium is here; a test skips without it, except under CI=true, where it fails. */
export const hasChromium = (() => {
  try {
    return Deno.statSync(CHROMIUM).isFile;
  } catch {
    return false;
  }
})();
export const inCi = Deno.env.get("CI") === "true";

/**
 * playwright-core probes /proc/sys/fs/binfmt_misc/WSLInterop when its module loads, which Deno
 * allows only under --allow-all; this variable defers that probe (it matters on Windows hosts only).
 */
export async function loadPlaywright(): Promise<typeof import("playwright-core")> {
  Deno.env.set("__IS_WSL_TEST__", "1");
  return await import("playwright-core");
}

export interface InjectedWallet {
  readonly account: PrivateKeyAccount;
  /** Every message the pages asked the wallet to sign, as text. */
  readonly signed: string[];
}

type WalletAnswer = { result: unknown } | { error: { code: number; message: string } };

/** Installs the wallet in every page `context` opens from now on. */
export async function injectWallet(
  context: BrowserContext,
  account: PrivateKeyAccount,
  chainId = 1,
): Promise<InjectedWallet> {
  const wallet: InjectedWallet = { account, signed: [] };
  await context.exposeFunction(
    "__injectedWallet",
    async (method: string, params: unknown[]): Promise<WalletAnswer> => {
      switch (method) {
        case "eth_requestAccounts":
        case "eth_accounts":
          return { result: [account.address] };
        case "eth_chainId":
          return { result: toHex(chainId) };
        case "personal_sign": {
          const [data, address] = params as [`0x${string}`, string];
          if (address.toLowerCase() !== account.address.toLowerCase()) {
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
  await context.addInitScript(WALLET_SCRIPT);
  return wallet;
}

const WALLET_SCRIPT = `(() => {
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
  window.addEventListener("eip6963:requestProvider", announce);
  window.ethereum = provider;
  announce();
})();`;
