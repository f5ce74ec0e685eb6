/**
 * The vault's encryption: AES-256-GCM through node:crypto, with a keyring of named keys. The first
 * key encrypts every write; every key decrypts, so keys can rotate without downtime. Each key's
 * bytes are copied once into the keyring and held in this module only (as bytes: the hosted
 * runtime's node:crypto takes no KeyObject); neither they nor anything derived from them ever
 * leaves it (not into SQL, logs or error messages). Synchronous: WebCrypto's asynchronous calls
 * cost a reveal of seven values several times the decryptions themselves.
 */
import { createCipheriv, createDecipheriv } from "node:crypto";
import type { EncryptionKeySpec } from "../config/encryption-keys.ts";
import { ServiceError } from "../http/errors.ts";
import type { SecretType } from "../../../protocol/secret-types.ts";

/** 96 bits: the IV size GCM is specified for; a fresh random one for every write. */
const IV_BYTES = 12;
/** GCM's authentication tag, stored after the ciphertext (as WebCrypto writes it). */
const TAG_BYTES = 16;
const CIPHER = "aes-256-gcm";
/** Versioned label, so these ciphertexts can never be mistaken for any other use of the key. */
const AAD_LABEL = "wallet-vault/user_secrets/v1";
// Shared: neither keeps state between calls (no streaming), and each costs to construct.
const UTF8 = new TextEncoder();
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });

/** Which row a ciphertext belongs to. It is authenticated, not encrypted. */
export interface SecretBinding {
  readonly userId: string;
  readonly secretType: SecretType;
}

/** What is stored in a user_secrets row. */
export interface SealedSecret {
  readonly ciphertext: Uint8Array;
  readonly iv: Uint8Array;
  readonly keyId: string;
}

export interface Keyring {
  /** The id new writes are encrypted under, or null when no key is configured. */
  readonly activeKeyId: string | null;
  /** Every id this keyring can decrypt, active first. */
  readonly keyIds: readonly string[];
  encrypt(plaintext: string, binding: SecretBinding): SealedSecret;
  /**
   * Throws ServiceError `encryption_key_unavailable` when the row's key id is not in the keyring,
   * and `decryption_failed` when the ciphertext does not authenticate for this row (tampered,
   * copied from another row, or a key id whose bytes were changed).
   */
  decrypt(sealed: SealedSecret, binding: SecretBinding): string;
}

/** Why a stored value cannot be read: its key is not configured, or it does not authenticate. */
export type KeyFailure = "encryption_key_unavailable" | "decryption_failed";

/** The code when `error` is one of decrypt's two refusals (not a fault of ours), else null. */
export function keyFailure(error: unknown): KeyFailure | null {
  return error instanceof ServiceError &&
      (error.code === "encryption_key_unavailable" || error.code === "decryption_failed")
    ? error.code
    : null;
}

/** Builds the keyring; throws if a key id repeats or a key is not 32 bytes. */
export function createKeyring(specs: readonly EncryptionKeySpec[]): Keyring {
  const keyIds = specs.map((spec) => spec.id);
  if (new Set(keyIds).size !== keyIds.length) {
    throw new Error("The keyring repeats a key id.");
  }
  // Copied, so that no caller's array can change a key the keyring holds.
  const keys: ReadonlyMap<string, Uint8Array> = new Map(specs.map((spec) => {
    if (spec.key.length !== 32) throw new Error(`Key ${spec.id} is not 32 bytes.`);
    return [spec.id, new Uint8Array(spec.key)];
  }));
  const activeKeyId = keyIds[0] ?? null;

  return {
    activeKeyId,
    keyIds,
    encrypt(plaintext, binding) {
      if (activeKeyId === null) {
        throw new ServiceError("not_configured", "The vault has no encryption key configured.");
      }
      const key = keys.get(activeKeyId)!;
      const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
      const cipher = createCipheriv(CIPHER, key, iv);
      cipher.setAAD(additionalData(binding, activeKeyId));
      const body = cipher.update(UTF8.encode(plaintext));
      cipher.final(); // GCM has nothing more to give: the tag is read below
      const tag = cipher.getAuthTag();
      const ciphertext = new Uint8Array(body.length + tag.length);
      ciphertext.set(body);
      ciphertext.set(tag, body.length);
      return { ciphertext, iv, keyId: activeKeyId };
    },

    decrypt(sealed, binding) {
      const key = keys.get(sealed.keyId);
      if (key === undefined) {
        throw new ServiceError(
          "encryption_key_unavailable",
          `The stored ${binding.secretType} is encrypted under a key that is not configured; ` +
            "restore that key to the keyring or save the secret again.",
          { secretType: binding.secretType },
        );
      }
      let plaintext: Uint8Array;
      try {
        const { ciphertext } = sealed;
        if (ciphertext.length < TAG_BYTES) throw new Error("no tag");
        const decipher = createDecipheriv(CIPHER, key, sealed.iv);
        decipher.setAAD(additionalData(binding, sealed.keyId));
        decipher.setAuthTag(ciphertext.subarray(ciphertext.length - TAG_BYTES));
        plaintext = decipher.update(ciphertext.subarray(0, ciphertext.length - TAG_BYTES));
        decipher.final(); // authenticates; GCM has nothing more to give, as in encrypt
      } catch {
        // Nothing is known but that it does not authenticate, and nothing more is leaked.
        throw new ServiceError(
          "decryption_failed",
          `The stored ${binding.secretType} could not be decrypted; save the secret again.`,
          { secretType: binding.secretType },
        );
      }
      return STRICT_UTF8.decode(plaintext);
    },
  };
}

/**
 * Binds a ciphertext to its creator, type and key id: a ciphertext copied to another creator's
 * row, another type or relabelled with another key id fails authentication instead of decrypting.
 * JSON of an array keeps the fields unambiguous whatever characters they hold.
 */
function additionalData(binding: SecretBinding, keyId: string): Uint8Array<ArrayBuffer> {
  return UTF8.encode(JSON.stringify([AAD_LABEL, binding.userId, binding.secretType, keyId]));
}
