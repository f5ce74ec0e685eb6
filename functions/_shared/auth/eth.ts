/**
 * The two pieces of Ethereum that sign-in needs, without viem (importing viem cost wallet-proof
 * about 160 ms of cold start):
 *
 * - EIP-191 personal-sign recovery: which address signed a message.
 * - EIP-55 checksummed addresses.
 *
 * Both run on one WebAssembly module embedded in ./secp256k1-wasm.ts (built by
 * scripts/secp256k1-wasm/build.sh): libsecp256k1 (Bitcoin Core's) for the public-key recovery,
 * about 0.1 ms against @noble/curves' 0.7–1 ms in Deno 2.9.6 (half of a sign-in's server CPU),
 * and Keccak-256. tests/eth_test.ts holds them equal to @noble/curves, @noble/hashes and viem.
 */
import { fromBase64, fromHex, toHex } from "../bytes.ts";
import { SECP256K1_WASM_BASE64 } from "./secp256k1-wasm.ts";

export type Address = `0x${string}`;

/** `0x` and 40 hex digits in EIP-55 mixed case; throws on anything that is not 20 bytes of hex. */
export function checksumAddress(address: string): Address {
  if (!/^0x[0-9a-fA-F]{40}$/.test(address)) throw new TypeError("not a 20-byte hex address");
  const lower = address.slice(2).toLowerCase();
  const hash = toHex(keccak256(utf8.encode(lower)));
  let mixed = "0x";
  for (let i = 0; i < lower.length; i++) {
    mixed += Number.parseInt(hash[i], 16) >= 8 ? lower[i].toUpperCase() : lower[i];
  }
  return mixed as Address;
}

/** keccak256("\x19Ethereum Signed Message:\n" + byte length + message): what personal_sign signs. */
export function personalMessageHash(message: string): Uint8Array {
  const bytes = utf8.encode(message);
  return keccak256(utf8.encode(`\x19Ethereum Signed Message:\n${bytes.length}`), bytes);
}

/**
 * The checksummed address whose key made `signature` (65 bytes: r, s, v with v in 0, 1, 27 or 28)
 * over `message` as personal_sign does. Throws on a signature that cannot be recovered (r or s out
 * of range, no curve point); callers check canonical form (low s) themselves.
 */
export function recoverPersonalSignAddress(message: string, signature: `0x${string}`): Address {
  return checksumAddress(recoverPersonalSigner(message, signature));
}

/**
 * The same address in lowercase hex, for a caller that only compares it: the EIP-55 checksum costs
 * one more keccak-256 (~10–25 µs).
 */
export function recoverPersonalSigner(message: string, signature: `0x${string}`): Address {
  const bytes = fromHex(signature.slice(2));
  if (bytes.length !== 65) throw new TypeError("a signature is 65 bytes");
  const v = bytes[64];
  const recovery = v >= 27 ? v - 27 : v;
  if (recovery !== 0 && recovery !== 1) throw new TypeError("v must be 0, 1, 27 or 28");
  const publicKey = recoverPublicKey(bytes.subarray(0, 64), personalMessageHash(message), recovery);
  return `0x${toHex(keccak256(publicKey.subarray(1)).subarray(12))}`;
}

const utf8 = new TextEncoder();

interface WasmExports {
  readonly memory: WebAssembly.Memory;
  /** Address of the recovery buffer: signature [0, 64), hash [64, 96), public key [96, 161). */
  io(): number;
  /** 1 when a key was recovered into the buffer, 0 when there is none. */
  recover(recoveryId: number): number;
  /** Keccak-256 in chunks: input buffer (KECCAK_CHUNK bytes), 32-byte output buffer. */
  keccak_input(): number;
  keccak_output(): number;
  keccak_reset(): void;
  keccak_update(length: number): number;
  keccak_final(): void;
}

const KECCAK_CHUNK = 4096;

interface Wasm {
  readonly exports: WasmExports;
  readonly io: Uint8Array;
  readonly keccakIn: Uint8Array;
  readonly keccakOut: Uint8Array;
}

let wasm: Wasm | undefined;

/** Compiled on first use (~1 ms for the 54 KB module), so importing this module costs nothing. */
function instance(): Wasm {
  if (wasm !== undefined) return wasm;
  const bytes = fromBase64(SECP256K1_WASM_BASE64);
  const exports = new WebAssembly.Instance(new WebAssembly.Module(bytes), {})
    .exports as unknown as WasmExports;
  // The module allocates nothing, so its memory never grows and these views stay valid.
  const buffer = exports.memory.buffer;
  wasm = {
    exports,
    io: new Uint8Array(buffer, exports.io(), 161),
    keccakIn: new Uint8Array(buffer, exports.keccak_input(), KECCAK_CHUNK),
    keccakOut: new Uint8Array(buffer, exports.keccak_output(), 32),
  };
  return wasm;
}

/**
 * Keccak-256 (Ethereum's: the original Keccak padding, not SHA3-256's) of the parts, concatenated.
 * Synchronous, so no other call can interleave with the module's one hash state.
 */
export function keccak256(...parts: Uint8Array[]): Uint8Array {
  const { exports, keccakIn, keccakOut } = instance();
  exports.keccak_reset();
  for (const part of parts) {
    for (let offset = 0; offset < part.length; offset += KECCAK_CHUNK) {
      const chunk = part.subarray(offset, offset + KECCAK_CHUNK);
      keccakIn.set(chunk);
      exports.keccak_update(chunk.length);
    }
  }
  exports.keccak_final();
  return keccakOut.slice();
}

/**
 * ECDSA public-key recovery: the uncompressed key (0x04 ‖ x ‖ y) whose signature `compact`
 * (r ‖ s) with `recoveryId` (0 or 1) signs the 32-byte `hash`. Throws when r or s is not in
 * [1, n − 1] or no curve point has x = r. Synchronous, so no other call can interleave with the
 * shared buffer.
 */
export function recoverPublicKey(
  compact: Uint8Array,
  hash: Uint8Array,
  recoveryId: number,
): Uint8Array {
  if (compact.length !== 64 || hash.length !== 32 || (recoveryId !== 0 && recoveryId !== 1)) {
    throw new TypeError("a 64-byte signature, a 32-byte hash and a recovery id of 0 or 1");
  }
  const { exports, io } = instance();
  io.set(compact, 0);
  io.set(hash, 64);
  const recovered = exports.recover(recoveryId);
  io.fill(0, 0, 96);
  if (recovered !== 1) throw new TypeError("no public key recovers from this signature");
  return io.slice(96, 161);
}
