/**
 * libsecp256k1 (Bitcoin Core's) public-key recovery and Keccak-256, on one WebAssembly module
 * embedded in ./secp256k1-wasm.ts (built by scripts/secp256k1-wasm/build.sh), for eth.ts. Both are
 * synchronous: the module has one buffer and one hash state, and no other call can interleave.
 * tests/eth_test.ts holds them equal to @noble/curves and @noble/hashes.
 */
import { fromBase64 } from "../bytes.ts";
import { SECP256K1_WASM_BASE64 } from "./secp256k1-wasm.ts";

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

/** Compiled on first use, so importing this module costs nothing. */
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
