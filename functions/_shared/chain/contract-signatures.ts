/**
 * Smart-contract wallet signatures, checked by the wallet itself on its own chain:
 *
 * - ERC-1271: `isValidSignature(bytes32 hash, bytes signature)` must return `0x1626ba7e`.
 * - ERC-6492: a signature ending in the 0x6492… suffix wraps (factory, factory calldata, inner
 *   signature) for a wallet that may not be deployed yet; the factory deploys it inside the call.
 *
 * Both go through one deployless `eth_call`: no `to`, the data our validator's init code and its
 * arguments (erc6492-validator.sol), so nothing needs to be deployed anywhere. The validator also
 * answers the chain it ran on, held here to the chain asked: an RPC that has started answering
 * from another chain is caught in the call that would have believed it, at no extra round trip.
 *
 * ABI encoding is written out by hand (one fixed layout) rather than imported: viem would cost
 * the function its cold start.
 */
import { concatBytes, hexToBytes } from "@noble/hashes/utils";
import type { ChainRpc } from "./chain-rpc.ts";
import type { ContractSignatureVerifier } from "./contract-signature-verifier.ts";
import { ERC6492_VALIDATOR_INIT_CODE } from "./erc6492-validator.ts";

/** Multisig, passkey and ERC-6492 signatures run to kilobytes; more than this is refused unread. */
export const MAX_CONTRACT_SIGNATURE_BYTES = 16 * 1024;

export function createContractSignatureVerifier(rpc: ChainRpc): ContractSignatureVerifier {
  return {
    chainIds: rpc.chainIds,
    async verify({ chainId, address, hash, signature, signal }) {
      const outcome = await rpc.call(
        chainId,
        { data: encodeValidatorCall(chainId, address, hash, signature) },
        signal,
      );
      // The validator reverts only on an ERC-6492 wrapper that does not decode: a no.
      if (outcome.reverted) return false;
      // Exactly two words, the chain it ran on and 0 or 1; anything else did not come from it.
      const answer = outcome.data;
      if (answer.length !== 64) throw rpc.unavailable(chainId, "malformed_answer");
      if (!equalBytes(answer.subarray(0, 32), uint256(chainId))) {
        throw rpc.unavailable(chainId, "chain_mismatch");
      }
      const verdict = answer.subarray(32);
      if (verdict.subarray(0, 31).some((b) => b !== 0) || verdict[31] > 1) {
        throw rpc.unavailable(chainId, "malformed_answer");
      }
      return verdict[31] === 1;
    },
  };
}

/**
 * The validator's init code with `abi.encode(chainId, signer, hash, signature)`, its
 * constructor's input.
 */
function encodeValidatorCall(
  chainId: number,
  signer: string,
  hash: Uint8Array,
  signature: Uint8Array,
): Uint8Array {
  return concatBytes(
    ERC6492_VALIDATOR_INIT_CODE,
    uint256(chainId),
    word(hexToBytes(signer.slice(2))),
    word(hash),
    uint256(128),
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

/** A safe integer as a uint256 word. */
function uint256(value: number): Uint8Array {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError("not a uint256 here");
  const out = new Uint8Array(32);
  new DataView(out.buffer).setBigUint64(24, BigInt(value));
  return out;
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

/** `bytes` in the tail: its length, then the bytes, zero-padded to a whole number of words. */
function dynamicBytes(value: Uint8Array): Uint8Array {
  const padded = new Uint8Array(Math.ceil(value.length / 32) * 32);
  padded.set(value);
  return concatBytes(uint256(value.length), padded);
}
