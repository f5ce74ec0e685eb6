// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// ERC-6492 universal validation, deployless: this contract is never deployed. Its init code with
/// the constructor's arguments appended is the `data` of an `eth_call` without a `to`; the node
/// runs the constructor and answers what it returns: one 32-byte word, 1 when `signer` accepts
/// `signature` over `hash` (ERC-1271), 0 when it does not.
///
/// A signature ending in the ERC-6492 suffix is `abi.encode(factory, factoryCalldata, inner)`
/// followed by the suffix. When `signer` has no code yet, the factory call deploys it first
/// (inside the call only: nothing is ever sent on chain), then `inner` is checked. When `signer`
/// already has code, `inner` is checked as it is, and only if that fails is the factory called
/// ("prepare", e.g. an owner change the wallet has not applied yet) and `inner` checked again.
///
/// Unlike the ERC's reference validator there is no ecrecover fallback for accounts without code:
/// keys are checked off-chain, where the canonical form (low s) is enforced.
contract ERC6492Validator {
    bytes32 private constant SUFFIX =
        0x6492649264926492649264926492649264926492649264926492649264926492;
    bytes4 private constant MAGIC = 0x1626ba7e;

    constructor(address signer, bytes32 hash, bytes memory signature) {
        bool valid = check(signer, hash, signature);
        assembly {
            mstore(0, valid)
            return(0, 32)
        }
    }

    function check(address signer, bytes32 hash, bytes memory signature) private returns (bool) {
        if (!wrapped(signature)) return accepts(signer, hash, signature);
        assembly {
            mstore(signature, sub(mload(signature), 32)) // drop the suffix
        }
        (address factory, bytes memory factoryCalldata, bytes memory inner) =
            abi.decode(signature, (address, bytes, bytes));
        if (signer.code.length > 0 && accepts(signer, hash, inner)) return true;
        (bool called,) = factory.call(factoryCalldata);
        return called && accepts(signer, hash, inner);
    }

    function wrapped(bytes memory signature) private pure returns (bool) {
        if (signature.length < 32) return false;
        bytes32 tail;
        assembly {
            tail := mload(add(signature, mload(signature)))
        }
        return tail == SUFFIX;
    }

    /// ERC-1271: true only for the magic value, ABI-encoded as bytes4 (the rest of the word zero).
    /// A revert, no code, or any other answer is false; the answer is read by hand, so malformed
    /// return data cannot revert this call.
    function accepts(address signer, bytes32 hash, bytes memory signature)
        private
        view
        returns (bool)
    {
        if (signer.code.length == 0) return false;
        (bool ok, bytes memory answer) =
            signer.staticcall(abi.encodeWithSelector(MAGIC, hash, signature));
        return ok && answer.length >= 32 && bytes32(answer) == bytes32(MAGIC);
    }
}
