/**
 * The two pieces of Ethereum that sign-in needs, on the audited primitives viem itself uses
 * (@noble/curves, @noble/hashes) rather than viem: importing viem cost wallet-proof about 160 ms
 * of cold start; these import in about 30.
 *
 * - EIP-191 personal-sign recovery: which address signed a message.
 * - EIP-55 checksummed addresses.
 */
import { secp256k1 } from "@noble/curves/secp256k1";
import { keccak_256 } from "@noble/hashes/sha3";
import { bytesToHex, concatBytes, hexToBytes, utf8ToBytes } from "@noble/hashes/utils";

export type Address = `0x${string}`;

/** `0x` and 40 hex digits in EIP-55 mixed case; throws on anything that is not 20 bytes of hex. */
export function checksumAddress(address: string): Address {
  if (!/^0x[0-9a-fA-F]{40}$/.test(address)) throw new TypeError("not a 20-byte hex address");
  const lower = address.slice(2).toLowerCase();
  const hash = bytesToHex(keccak_256(utf8ToBytes(lower)));
  let mixed = "0x";
  for (let i = 0; i < lower.length; i++) {
    mixed += Number.parseInt(hash[i], 16) >= 8 ? lower[i].toUpperCase() : lower[i];
  }
  return mixed as Address;
}

/** keccak256("\x19Ethereum Signed Message:\n" + byte length + message): what personal_sign signs. */
export function personalMessageHash(message: string): Uint8Array {
  const bytes = utf8ToBytes(message);
  return keccak_256(
    concatBytes(utf8ToBytes(`\x19Ethereum Signed Message:\n${bytes.length}`), bytes),
  );
}

/**
 * The checksummed address whose key made `signature` (65 bytes: r, s, v with v in 0, 1, 27 or 28)
 * over `message` as personal_sign does. Throws on a signature that cannot be recovered (r or s out
 * of range, no curve point); callers check canonical form (low s) themselves.
 */
export function recoverPersonalSignAddress(message: string, signature: `0x${string}`): Address {
  const bytes = hexToBytes(signature.slice(2));
  if (bytes.length !== 65) throw new TypeError("a signature is 65 bytes");
  const v = bytes[64];
  const recovery = v >= 27 ? v - 27 : v;
  if (recovery !== 0 && recovery !== 1) throw new TypeError("v must be 0, 1, 27 or 28");
  const publicKey = secp256k1.Signature.fromCompact(bytes.subarray(0, 64))
    .addRecoveryBit(recovery)
    .recoverPublicKey(personalMessageHash(message))
    .toRawBytes(false); // 0x04 ‖ x ‖ y
  const address = keccak_256(publicKey.subarray(1)).subarray(12);
  return checksumAddress(`0x${bytesToHex(address)}`);
}
