/**
 * The two pieces of Ethereum that sign-in needs, without viem (whose import weighs on a function's
 * cold start):
 *
 * - EIP-191 personal-sign recovery: which address signed a message.
 * - EIP-55 checksummed addresses.
 *
 * Both run on secp256k1.ts's WebAssembly. tests/eth_test.ts holds them equal to viem.
 */
import { fromHex, toHex } from "../bytes.ts";
import { keccak256, recoverPublicKey } from "./secp256k1.ts";

const utf8 = new TextEncoder();

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
 * The address, in lowercase hex, whose key made `signature` (65 bytes: r, s, v with v in 0, 1, 27
 * or 28) over `message` as personal_sign does. Throws on a signature that cannot be recovered (r
 * or s out of range, no curve point); callers check canonical form (low s) themselves. Not
 * checksummed: callers only compare it, and the checksum costs another Keccak-256.
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
