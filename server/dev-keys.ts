/**
 * Development keys: with nothing configured, the local server generates an encryption key, a
 * live-run credential (what `deno task sign-in` exports as SERVER_REVEAL_TOKEN; its field keeps that
 * name, so files and scripts written before credentials existed keep working; main.ts registers it
 * in the local database as `development`, with every type) and an ES256 signing key (a JWK as
 * `supabase gen signing-key` writes it) on first start, keeps them in a git-ignored file readable
 * only by the owner (mode 0600), and reuses them later so stored secrets stay decryptable. Each
 * carries a mark production refuses (files written before the marks existed carry none); a file
 * written before signing keys gains one, and one written before credentials gains a credential.
 */
import { generateKeyPairSync } from "node:crypto";

import {
  generateLiveRunCredential,
  isLiveRunCredential,
} from "../functions/_shared/auth/live-run-credential-format.ts";
import { DEV_ENCRYPTION_KEY_MARK } from "../functions/_shared/config/encryption-keys.ts";
import { DEV_KID_PREFIX } from "../functions/_shared/auth/session-keys.ts";
import { HAS_MODES } from "./data-dir.ts";

export const DEFAULT_DEV_KEYS_PATH = ".local/dev-keys.json";

export interface DevKeys {
  readonly ENCRYPTION_KEY: string;
  /** The development live-run credential (`wvlr_…`), not the deprecated single token. */
  readonly SERVER_REVEAL_TOKEN: string;
  /** A JSON array holding one private ES256 JWK, as supabase/signing_keys.json holds keys. */
  readonly JWT_SIGNING_KEYS: string;
}

const DEV_KEY_NAMES = ["ENCRYPTION_KEY", "SERVER_REVEAL_TOKEN", "JWT_SIGNING_KEYS"] as const;

/**
 * A fresh ES256 signing key in the Supabase CLI's format, its kid marked as a development key's.
 * Synchronous (node:crypto) so that tests can build an environment in one expression.
 */
export function generateDevSigningKey(): Record<string, unknown> {
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const { kty, crv, x, y, d } = privateKey.export({ format: "jwk" });
  return {
    kty,
    kid: `${DEV_KID_PREFIX}${crypto.randomUUID()}`,
    use: "sig",
    key_ops: ["sign", "verify"],
    alg: "ES256",
    ext: true,
    d,
    crv,
    x,
    y,
  };
}

/**
 * Fresh development keys, each marked so that production refuses them even after they are copied
 * into its environment: the encryption key by DEV_ENCRYPTION_KEY_MARK (config/encryption-keys.ts), the
 * signing key by its kid (DEV_KID_PREFIX), the credential by its format (config.ts refuses one as
 * SERVER_REVEAL_TOKEN). The encryption key is the mark's 12 bytes and 20 random ones.
 */
export function generateDevKeys(): DevKeys {
  const random = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(20))));
  return {
    ENCRYPTION_KEY: `${DEV_ENCRYPTION_KEY_MARK}${random}`,
    SERVER_REVEAL_TOKEN: generateLiveRunCredential(),
    JWT_SIGNING_KEYS: JSON.stringify([generateDevSigningKey()]),
  };
}

/** Reads the file, or creates it when missing. `created` tells the caller which happened. */
export async function loadOrCreateDevKeys(
  path = DEFAULT_DEV_KEYS_PATH,
): Promise<{ keys: DevKeys; created: boolean }> {
  try {
    const stored = JSON.parse(await Deno.readTextFile(path));
    if (typeof stored.JWT_SIGNING_KEYS !== "string" && typeof stored.JWT_SECRET === "string") {
      // Written before signing keys: the others are kept (stored secrets stay decryptable).
      stored.JWT_SIGNING_KEYS = JSON.stringify([generateDevSigningKey()]);
      await Deno.writeTextFile(path, JSON.stringify(stored, null, 2) + "\n", { mode: 0o600 });
    }
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
  if (!env.JWT_SIGNING_KEYS?.trim()) merged.JWT_SIGNING_KEYS = keys.JWT_SIGNING_KEYS;
  return merged;
}

/** Whether the environment leaves any dev-generated key to fill. */
export function needsDevKeys(env: Readonly<Record<string, string | undefined>>): boolean {
  return !(env.ENCRYPTION_KEYS?.trim() || env.ENCRYPTION_KEY?.trim()) ||
    !env.JWT_SIGNING_KEYS?.trim();
}
