/**
 * The wallet side of sign-in: the EIP-1193 provider interface every wallet implements, the calls
 * sign-in needs from it, and EIP-6963 discovery for pages where several wallets are installed.
 *
 * Written in erasable TypeScript only (no enums, namespaces or parameter properties): the local
 * server strips the types and serves it to browsers as is.
 */
import { SignatureRejectedError, VaultError } from "./errors.ts";

export interface Eip1193RequestArguments {
  readonly method: string;
  readonly params?: readonly unknown[] | Record<string, unknown>;
}

/** Any EIP-1193 wallet: `window.ethereum`, one found through EIP-6963, WalletConnect, … */
export interface Eip1193Provider {
  request(args: Eip1193RequestArguments): Promise<unknown>;
}

/** EIP-1193 `ProviderRpcError`: a wallet's refusal carries a numeric code. */
export interface ProviderRpcError {
  readonly code: number;
  readonly message?: string;
}

/** The user rejected the request (EIP-1193). */
const USER_REJECTED_REQUEST = 4001;

/**
 * A wallet's failure to connect or to sign, as the client's error: SignatureRejectedError when the
 * creator declined (with `declined` as its message when given), else wallet_error with the wallet's
 * own reason.
 */
export function walletFailure(
  error: unknown,
  step: "connect" | "sign",
  declined?: string,
): VaultError {
  if (providerErrorCode(error) === USER_REJECTED_REQUEST) {
    const rejected = new SignatureRejectedError(step, error);
    if (declined !== undefined) rejected.message = declined;
    return rejected;
  }
  const reason = (error as { message?: unknown } | null)?.message;
  return new VaultError(
    "wallet_error",
    typeof reason === "string" && reason !== "" ? reason : "The wallet could not complete this.",
    { cause: error },
  );
}

function providerErrorCode(error: unknown): number | null {
  // Wallets nest the real error differently (ethers wraps it in `error`, some in `data.originalError`),
  // and some wrap a rejection in a code of their own (MetaMask: -32603 around a 4001): a rejection
  // anywhere is the answer, else the outermost code.
  const codes = [
    error,
    (error as { error?: unknown } | null)?.error,
    (error as { data?: { originalError?: unknown } } | null)?.data?.originalError,
  ].map((candidate) => (candidate as { code?: unknown } | null)?.code)
    .filter((code): code is number => typeof code === "number");
  return codes.includes(USER_REJECTED_REQUEST) ? USER_REJECTED_REQUEST : codes[0] ?? null;
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** The connected account, asking the wallet to connect if needed (this may open its window). */
export async function requestAccount(provider: Eip1193Provider): Promise<`0x${string}`> {
  const accounts = await provider.request({ method: "eth_requestAccounts" });
  const first = Array.isArray(accounts) ? accounts[0] : undefined;
  if (typeof first !== "string" || !ADDRESS.test(first)) {
    throw new TypeError("The wallet returned no account.");
  }
  return first as `0x${string}`;
}

export async function requestChainId(provider: Eip1193Provider): Promise<number> {
  const chainId = await provider.request({ method: "eth_chainId" });
  // EIP-1193 says 0x-hex; a few providers answer a decimal string or a number. Anything else
  // (trailing garbage, a decimal read as hex) would name another chain.
  const parsed = typeof chainId === "number"
    ? chainId
    : typeof chainId !== "string"
    ? NaN
    : /^0x[0-9a-f]+$/i.test(chainId)
    ? Number.parseInt(chainId, 16)
    : /^[0-9]+$/.test(chainId)
    ? Number(chainId)
    : NaN;
  if (!Number.isSafeInteger(parsed) || parsed < 1) {
    throw new TypeError("The wallet returned no chain id.");
  }
  return parsed;
}

/**
 * EIP-191 personal sign. The message goes as 0x-hex of its UTF-8 bytes, the form every wallet
 * accepts (a plain string is ambiguous when it happens to look like hex).
 */
export async function personalSign(
  provider: Eip1193Provider,
  message: string,
  address: string,
): Promise<string> {
  const hex = Array.from(new TextEncoder().encode(message), (b) => b.toString(16).padStart(2, "0"))
    .join("");
  const signature = await provider.request({
    method: "personal_sign",
    params: [`0x${hex}`, address],
  });
  if (typeof signature !== "string") throw new TypeError("The wallet returned no signature.");
  return signature;
}

// ---------------------------------------------------------------------------------------------
// EIP-6963: multi-wallet discovery

export interface Eip6963ProviderInfo {
  readonly uuid: string;
  readonly name: string;
  /** A data: URI of the wallet's icon. */
  readonly icon: string;
  /** Reverse-DNS id, e.g. io.metamask. */
  readonly rdns: string;
}

export interface DiscoveredWallet {
  readonly info: Eip6963ProviderInfo;
  readonly provider: Eip1193Provider;
}

interface AnnounceEvent extends Event {
  readonly detail?: { info?: Eip6963ProviderInfo; provider?: Eip1193Provider };
}

/**
 * Asks installed wallets to announce themselves and collects the answers for `waitMs`
 * (announcements are synchronous in practice; the wait covers wallets injected late).
 * Without EIP-6963 support, a legacy `window.ethereum` is returned as the only wallet.
 */
export async function discoverWallets(
  options: { waitMs?: number; target?: EventTarget } = {},
): Promise<DiscoveredWallet[]> {
  const target = options.target ?? globalThis;
  const found = new Map<string, DiscoveredWallet>();
  const onAnnounce = (event: Event) => {
    const detail = (event as AnnounceEvent).detail;
    if (
      typeof detail?.info?.uuid === "string" && typeof detail.provider?.request === "function"
    ) {
      found.set(detail.info.uuid, { info: detail.info, provider: detail.provider });
    }
  };
  target.addEventListener("eip6963:announceProvider", onAnnounce);
  try {
    target.dispatchEvent(new Event("eip6963:requestProvider"));
    await new Promise((resolve) => setTimeout(resolve, options.waitMs ?? 200));
  } finally {
    target.removeEventListener("eip6963:announceProvider", onAnnounce);
  }
  const wallets = [...found.values()];
  const legacy = (globalThis as { ethereum?: Eip1193Provider }).ethereum;
  if (
    wallets.length === 0 && legacy !== undefined && typeof legacy.request === "function"
  ) {
    wallets.push({
      info: { uuid: "window.ethereum", name: "Browser wallet", icon: "", rdns: "" },
      provider: legacy,
    });
  }
  return wallets;
}
