/**
 * The throwaway wallets `deno task sign-in` makes: each one's private key is kept in
 * .local/sign-in-wallets/<address>.json (mode 0600, git-ignored, in the working directory as the
 * server's development keys are), so `deno task sign-act` can sign a creator's later acts (unlock,
 * sign sessions out, delete the account) for it. The key is read from there and nowhere else: it
 * is never printed, exported or sent. A key is kept for KEPT_DAYS, the longest a session lasts
 * with the default settings, after which the next sign-in removes it: each run is a new wallet,
 * and without that the directory would only grow.
 */
import type { Hex } from "viem";

export const DEV_WALLETS_DIR = ".local/sign-in-wallets";

/** How long a kept key outlives its sign-in: REFRESH_TOKEN_TTL_SECONDS's default, in days. */
export const KEPT_DAYS = 30;

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

/**
 * Removes the kept keys written more than KEPT_DAYS before `now`; the names of those removed. Only
 * files named as keepDevWallet names them are looked at.
 */
export async function forgetOldDevWallets(now = Date.now()): Promise<string[]> {
  const cutoff = now - KEPT_DAYS * 86_400_000;
  const removed: string[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(DEV_WALLETS_DIR));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return removed;
    throw error;
  }
  for (const entry of entries) {
    const address = entry.name.replace(/\.json$/, "");
    if (!entry.isFile || !isAddress(address) || entry.name !== `${address.toLowerCase()}.json`) {
      continue;
    }
    const path = devWalletPath(address);
    const written = (await Deno.stat(path)).mtime?.getTime();
    if (written !== undefined && written < cutoff) {
      await Deno.remove(path);
      removed.push(entry.name);
    }
  }
  return removed;
}
