/**
 * Development keys: with nothing configured, the local server generates an encryption key, a
 * live-run credential and a JWT secret on first start, keeps them in a git-ignored file readable
 * only by the owner (mode 0600), and reuses them later so stored secrets stay decryptable. The
 * keys carry a mark production refuses (files written before the marks existed carry none); the
 * credential is registered in the local database as `development`, with every type (main.ts),
 * and is what `deno task sign-in` exports as SERVER_REVEAL_TOKEN. Its field keeps that name, so
 * files and scripts written before credentials existed keep working.
 */

import { randomBase64Url } from "../functions/_shared/auth/random.ts";
import {
  generateLiveRunCredential,
  isLiveRunCredential,
} from "../functions/_shared/auth/live-run-credential-format.ts";
import { DEV_ENCRYPTION_KEY_MARK, DEV_SECRET_PREFIX } from "../functions/_shared/config/keyring.ts";
import { HAS_MODES } from "./data-dir.ts";

export const DEFAULT_DEV_KEYS_PATH = ".local/dev-keys.json";

export interface DevKeys {
  readonly ENCRYPTION_KEY: string;
  /** The development live-run credential (`wvlr_…`), not the deprecated single token. */
  readonly SERVER_REVEAL_TOKEN: string;
  readonly JWT_SECRET: string;
}

const DEV_KEY_NAMES = ["ENCRYPTION_KEY", "SERVER_REVEAL_TOKEN", "JWT_SECRET"] as const;

/**
 * Fresh development keys, each marked (config/keyring.ts: DEV_SECRET_PREFIX, DEV_ENCRYPTION_KEY_MARK) so
 * that production refuses them even after they are copied into its environment (the credential by
 * its format: config.ts refuses one as SERVER_REVEAL_TOKEN). The encryption
 * key is the mark's 12 bytes and 20 random ones (160 bits: plenty for data on a laptop).
 */
export function generateDevKeys(): DevKeys {
  const random = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(20))));
  return {
    ENCRYPTION_KEY: `${DEV_ENCRYPTION_KEY_MARK}${random}`,
    SERVER_REVEAL_TOKEN: generateLiveRunCredential(),
    JWT_SECRET: `${DEV_SECRET_PREFIX}${randomBase64Url(48)}`,
  };
}

/** Reads the file, or creates it when missing. `created` tells the caller which happened. */
export async function loadOrCreateDevKeys(
  path = DEFAULT_DEV_KEYS_PATH,
): Promise<{ keys: DevKeys; created: boolean }> {
  try {
    const stored = JSON.parse(await Deno.readTextFile(path));
    if (DEV_KEY_NAMES.every((name) => typeof stored[name] === "string")) {
      await ownerOnly(path);
      if (isLiveRunCredential(stored.SERVER_REVEAL_TOKEN)) {
        return { keys: stored as DevKeys, created: false };
      }
      // A file from before credentials: its single token becomes a development credential.
      const keys = { ...stored, SERVER_REVEAL_TOKEN: generateLiveRunCredential() } as DevKeys;
      await Deno.writeTextFile(path, JSON.stringify(keys, null, 2) + "\n", { mode: 0o600 });
      return { keys, created: false };
    }
    throw new Error(`${path} is incomplete; delete it to generate new development keys`);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  const keys = generateDevKeys();
  const dir = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : ".";
  await Deno.mkdir(dir, { recursive: true });
  // createNew: two servers starting at once must not overwrite each other's keys.
  await Deno.writeTextFile(path, JSON.stringify(keys, null, 2) + "\n", {
    mode: 0o600,
    createNew: true,
  });
  return { keys, created: true };
}

/**
 * A keys file copied or restored with looser permissions is made the owner's alone again, as the
 * data directory is on every start (Windows has no modes to set).
 */
async function ownerOnly(path: string): Promise<void> {
  if (HAS_MODES) await Deno.chmod(path, 0o600);
}

/**
 * Dev keys fill only the gaps: anything set in the environment wins. The credential is not a
 * setting (it is a row, registered by main.ts), so SERVER_REVEAL_TOKEN, the deprecated legacy
 * token, stays unset unless the environment sets it.
 */
export function withDevKeys(
  env: Readonly<Record<string, string | undefined>>,
  keys: DevKeys,
): Record<string, string | undefined> {
  const merged: Record<string, string | undefined> = { ...env };
  const hasKeyring = Boolean(env.ENCRYPTION_KEYS?.trim() || env.ENCRYPTION_KEY?.trim());
  if (!hasKeyring) merged.ENCRYPTION_KEY = keys.ENCRYPTION_KEY;
  if (!env.JWT_SECRET?.trim()) merged.JWT_SECRET = keys.JWT_SECRET;
  return merged;
}

/** Whether the environment leaves any dev-generated key to fill. */
export function needsDevKeys(env: Readonly<Record<string, string | undefined>>): boolean {
  return !(env.ENCRYPTION_KEYS?.trim() || env.ENCRYPTION_KEY?.trim()) || !env.JWT_SECRET?.trim();
}
