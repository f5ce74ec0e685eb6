/**
 * Smart-contract wallet signatures, checked by the wallet itself on its own chain:
 *
 * - ERC-1271: `isValidSignature(bytes32 hash, bytes signature)` must return `0x1626ba7e`.
 * - ERC-6492: a signature ending in the 0x6492… suffix wraps (factory, factory calldata, inner
 *   signature) for a wallet that may not be deployed yet. It is checked by the ERC's universal
 *   validation, deployless: `eth_call` without `to` whose data is our validator's init code and its
 *   arguments (erc6492-validator.sol), so nothing needs to be deployed anywhere.
 *
 * ABI encoding is written out by hand (three fixed layouts) rather than imported: viem would cost
 * the function its cold start.
 */
import { concatBytes, hexToBytes } from "@noble/hashes/utils";
import type { ChainRpc } from "./chain-rpc.ts";
import type { ContractSignatureVerifier } from "./contract-signature-verifier.ts";
import { ERC6492_VALIDATOR_INIT_CODE } from "./erc6492-validator.ts";

/** `isValidSignature(bytes32,bytes)`'s selector, which is also its success value. */
export const ERC1271_MAGIC = hexToBytes("1626ba7e");
export const ERC6492_SUFFIX = hexToBytes("6492".repeat(16));
/** Multisig, passkey and ERC-6492 signatures run to kilobytes; more than this is refused unread. */
export const MAX_CONTRACT_SIGNATURE_BYTES = 16 * 1024;

export function createContractSignatureVerifier(rpc: ChainRpc): ContractSignatureVerifier {
  return {
    chainIds: rpc.chainIds,
    async verify({ chainId, address, hash, signature, signal }) {
      if (isErc6492Signature(signature)) {
        const outcome = await rpc.call(
          chainId,
          { data: encodeValidatorCall(address, hash, signature) },
          signal,
        );
        // Our validator cannot revert on any input short of running out of gas: treat it as no.
        if (outcome.reverted) return false;
        // It returns exactly one word, 0 or 1; anything else did not come from it.
        const word = outcome.data;
        if (word.length !== 32 || word.subarray(0, 31).some((b) => b !== 0) || word[31] > 1) {
          throw rpc.unavailable(chainId, "malformed_answer");
        }
        return word[31] === 1;
      }
      const outcome = await rpc.call(
        chainId,
        { to: address, data: encodeIsValidSignature(hash, signature) },
        signal,
      );
      // A revert, an account without code ("0x") or any other value is the wallet saying no.
      return !outcome.reverted && isMagicWord(outcome.data);
    },
  };
}

export function isErc6492Signature(signature: Uint8Array): boolean {
  if (signature.length < ERC6492_SUFFIX.length) return false;
  const tail = signature.subarray(signature.length - ERC6492_SUFFIX.length);
  return tail.every((byte, i) => byte === ERC6492_SUFFIX[i]);
}

/** `bytes4` ABI-encoded: the magic value, then 28 zero bytes (as Solidity's decoder requires). */
function isMagicWord(data: Uint8Array): boolean {
  return data.length >= 32 &&
    data.subarray(0, 4).every((byte, i) => byte === ERC1271_MAGIC[i]) &&
    data.subarray(4, 32).every((byte) => byte === 0);
}

/** `abi.encodeWithSelector(0x1626ba7e, hash, signature)`. */
export function encodeIsValidSignature(hash: Uint8Array, signature: Uint8Array): Uint8Array {
  return concatBytes(ERC1271_MAGIC, word(hash), uint(64), dynamicBytes(signature));
}

/** The validator's init code with `abi.encode(signer, hash, signature)`, its constructor's input. */
export function encodeValidatorCall(
  signer: string,
  hash: Uint8Array,
  signature: Uint8Array,
): Uint8Array {
  return concatBytes(
    ERC6492_VALIDATOR_INIT_CODE,
    word(hexToBytes(signer.slice(2))),
    word(hash),
    uint(96),
    dynamicBytes(signature),
  );
}

/** One 32-byte word with `value` right-aligned: an address, or a bytes32 that fills it. */
function word(value: Uint8Array): Uint8Array {
  if (value.length > 32) throw new RangeError("a word holds at most 32 bytes");
  const out = new Uint8Array(32);
  out.set(value, 32 - value.length);
  return out;
}

function uint(value: number): Uint8Array {
  const out = new Uint8Array(32);
  new DataView(out.buffer).setUint32(28, value);
  return out;
}

/** `bytes` in the tail: its length, then the bytes, zero-padded to a whole number of words. */
function dynamicBytes(value: Uint8Array): Uint8Array {
  const padded = new Uint8Array(Math.ceil(value.length / 32) * 32);
  padded.set(value);
  return concatBytes(uint(value.length), padded);
}
