/**
 * The throwaway wallets `deno task sign-in` makes: each one's private key is kept in
 * .local/sign-in-wallets/<address>.json (mode 0600, git-ignored, in the working directory as the
 * server's development keys are), so `deno task sign-act` can sign a creator's later acts (unlock,
 * sign sessions out, delete the account) for it. The key is read from there and nowhere else: it
 * is never printed, exported or sent.
 */
import type { Hex } from "viem";

export const DEV_WALLETS_DIR = ".local/sign-in-wallets";

const isAddress = (value: string) => /^0x[0-9a-fA-F]{40}$/.test(value);

/** Where a wallet's key is kept. */
export function devWalletPath(address: string): string {
  if (!isAddress(address)) throw new Error("not a wallet address");
  return `${DEV_WALLETS_DIR}/${address.toLowerCase()}.json`;
}

/** Keeps `privateKey` for `address`, readable by the owner only. */
export async function keepDevWallet(address: string, privateKey: Hex): Promise<void> {
  await Deno.mkdir(DEV_WALLETS_DIR, { recursive: true, mode: 0o700 });
  await Deno.writeTextFile(devWalletPath(address), `${JSON.stringify({ privateKey })}\n`, {
    mode: 0o600,
    createNew: true,
  });
}

/** The key kept for `address`, or null when there is none (another machine, or removed). */
export async function devWalletKey(address: string): Promise<Hex | null> {
  let text: string;
  try {
    text = await Deno.readTextFile(devWalletPath(address));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
  const key = (JSON.parse(text) as { privateKey?: unknown }).privateKey;
  return typeof key === "string" && /^0x[0-9a-f]{64}$/.test(key) ? key as Hex : null;
}
