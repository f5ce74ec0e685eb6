/**
 * The vault's encryption in isolation: AES-256-GCM round trips, a fresh IV per write, ciphertexts
 * bound to creator, type and key id, the keyring's first key encrypting and every key decrypting,
 * the stored format WebCrypto's AES-GCM reads and writes, no key material within a caller's
 * reach, and errors that carry no key material.
 */
import assert from "node:assert/strict";
import type { EncryptionKeySpec } from "../functions/_shared/config/encryption-keys.ts";
import { ServiceError } from "../functions/_shared/http/errors.ts";
import { createKeyring } from "../functions/_shared/vault/vault-crypto.ts";

const key = (id: string): EncryptionKeySpec => ({
  id,
  key: crypto.getRandomValues(new Uint8Array(32)),
});
const ALICE = "0b8f4c2e-5d7a-4e1b-9c3f-2a6d8e0f1b2c";
const BOB = "7e1d3a5c-9b2f-4c6e-8a0d-1f3b5d7e9a2c";
const base64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));

function throwsWith(act: () => unknown, code: string): ServiceError {
  try {
    act();
  } catch (error) {
    assert.ok(error instanceof ServiceError, `expected a ServiceError, got ${error}`);
    assert.equal(error.code, code);
    return error;
  }
  assert.fail(`expected ${code}, but it returned`);
}

Deno.test("a value round-trips, as ciphertext with a 96-bit IV and a 128-bit tag", () => {
  const keyring = createKeyring([key("k1")]);
  const value = "sk-live-ünïcødé-🔑-" + crypto.randomUUID();
  const sealed = keyring.encrypt(value, { userId: ALICE, secretType: "provider_b_key" });
  assert.equal(sealed.keyId, "k1");
  assert.equal(sealed.iv.length, 12);
  assert.equal(sealed.ciphertext.length, new TextEncoder().encode(value).length + 16);
  assert.ok(!new TextDecoder().decode(sealed.ciphertext).includes(value.slice(0, 8)));
  assert.equal(
    keyring.decrypt(sealed, { userId: ALICE, secretType: "provider_b_key" }),
    value,
  );
});

Deno.test("every write gets a fresh IV, so equal values never give equal ciphertexts", () => {
  const keyring = createKeyring([key("k1")]);
  const binding = { userId: ALICE, secretType: "provider_c_key" } as const;
  const seen = new Set<string>();
  for (let i = 0; i < 50; i++) {
    const sealed = keyring.encrypt("the same value", binding);
    seen.add(`${base64(sealed.iv)}|${base64(sealed.ciphertext)}`);
  }
  assert.equal(seen.size, 50);
  const ivs = new Set([...seen].map((entry) => entry.split("|")[0]));
  assert.equal(ivs.size, 50);
});

Deno.test("a ciphertext opens only for the creator, type and key id it was written for", () => {
  const k1 = key("k1");
  const keyring = createKeyring([k1, { id: "k1-copy", key: k1.key }]);
  const sealed = keyring.encrypt("sk-bound", { userId: ALICE, secretType: "provider_b_key" });
  throwsWith(
    () => keyring.decrypt(sealed, { userId: BOB, secretType: "provider_b_key" }),
    "decryption_failed",
  );
  throwsWith(
    () => keyring.decrypt(sealed, { userId: ALICE, secretType: "provider_c_key" }),
    "decryption_failed",
  );
  // Same key bytes under another id: the id is authenticated too, so a relabelled row fails.
  throwsWith(
    () =>
      keyring.decrypt({ ...sealed, keyId: "k1-copy" }, {
        userId: ALICE,
        secretType: "provider_b_key",
      }),
    "decryption_failed",
  );
  const flipped = new Uint8Array(sealed.ciphertext);
  flipped[0] ^= 1;
  throwsWith(
    () =>
      keyring.decrypt(
        { ...sealed, ciphertext: flipped },
        { userId: ALICE, secretType: "provider_b_key" },
      ),
    "decryption_failed",
  );
});

Deno.test("the first key encrypts and every key of the keyring decrypts", () => {
  const k1 = key("k1");
  const k2 = key("k2");
  const old = createKeyring([k1]);
  const rotated = createKeyring([k2, k1]);
  const binding = { userId: ALICE, secretType: "provider_e_key" } as const;
  const underK1 = old.encrypt("sk-old", binding);
  assert.equal(rotated.activeKeyId, "k2");
  assert.deepEqual(rotated.keyIds, ["k2", "k1"]);
  assert.equal(rotated.decrypt(underK1, binding), "sk-old");
  const underK2 = rotated.encrypt("sk-new", binding);
  assert.equal(underK2.keyId, "k2");
  assert.equal(rotated.decrypt(underK2, binding), "sk-new");
  // A keyring without k2 cannot read it, and says so by type, never by key.
  const error = throwsWith(() => old.decrypt(underK2, binding), "encryption_key_unavailable");
  assert.match(error.message, /provider_e_key/);
  assert.deepEqual(error.details, { secretType: "provider_e_key" });
  for (const material of [base64(k1.key), base64(k2.key)]) {
    assert.ok(!JSON.stringify({ m: error.message, d: error.details }).includes(material));
  }
});

Deno.test("a key id reused with other key bytes fails to decrypt instead of giving garbage", async () => {
  const binding = { userId: BOB, secretType: "provider_d_key" } as const;
  const sealed = await createKeyring([key("k1")]).encrypt("sk-d", binding);
  const impostor = createKeyring([key("k1")]);
  const error = throwsWith(() => impostor.decrypt(sealed, binding), "decryption_failed");
  assert.match(error.message, /provider_d_key/);
});

Deno.test("the stored format is AES-256-GCM's as WebCrypto writes it: either side opens what the other sealed", async () => {
  const spec = key("k1");
  const keyring = createKeyring([spec]);
  const subtleKey = await crypto.subtle.importKey(
    "raw",
    new Uint8Array(spec.key),
    "AES-GCM",
    false,
    [
      "encrypt",
      "decrypt",
    ],
  );
  const binding = { userId: ALICE, secretType: "provider_c_key" } as const;
  // The authenticated data: the label, creator, type and key id, as a JSON array.
  const additionalData = new TextEncoder().encode(
    JSON.stringify(["wallet-vault/user_secrets/v1", ALICE, "provider_c_key", "k1"]),
  );
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const params = { name: "AES-GCM", iv, additionalData };
  const bySubtle = new Uint8Array(
    await crypto.subtle.encrypt(params, subtleKey, new TextEncoder().encode("sk-from-subtle")),
  );
  assert.equal(
    keyring.decrypt({ ciphertext: bySubtle, iv, keyId: "k1" }, binding),
    "sk-from-subtle",
  );
  const sealed = keyring.encrypt("sk-from-keyring", binding);
  const opened = await crypto.subtle.decrypt(
    { ...params, iv: new Uint8Array(sealed.iv) },
    subtleKey,
    new Uint8Array(sealed.ciphertext),
  );
  assert.equal(new TextDecoder().decode(opened), "sk-from-keyring");
});

Deno.test("a ciphertext shorter than its tag, or an IV of another length, fails as decryption_failed", () => {
  const keyring = createKeyring([key("k1")]);
  const binding = { userId: BOB, secretType: "provider_a_api_key" } as const;
  const sealed = keyring.encrypt("sk-a", binding);
  throwsWith(
    () => keyring.decrypt({ ...sealed, ciphertext: sealed.ciphertext.subarray(0, 15) }, binding),
    "decryption_failed",
  );
  throwsWith(
    () => keyring.decrypt({ ...sealed, iv: new Uint8Array(16) }, binding),
    "decryption_failed",
  );
});

Deno.test("the keyring holds no key material where a caller could read it", () => {
  const spec = key("k1");
  const keyring = createKeyring([spec]);
  const shown = JSON.stringify(keyring) + Object.values(keyring).map(String).join();
  assert.ok(!shown.includes(base64(spec.key)));
  assert.deepEqual(Object.keys(keyring).sort(), [
    "activeKeyId",
    "decrypt",
    "encrypt",
    "keyIds",
  ]);
});

Deno.test("an empty keyring refuses to encrypt with not_configured", () => {
  const keyring = createKeyring([]);
  assert.equal(keyring.activeKeyId, null);
  throwsWith(
    () => keyring.encrypt("x", { userId: ALICE, secretType: "provider_b_key" }),
    "not_configured",
  );
});
