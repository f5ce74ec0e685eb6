// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// Every contract-wallet check, deployless: this contract is never deployed. Its init code with
/// the constructor's arguments appended is the `data` of an `eth_call` without a `to`; the node
/// runs the constructor and answers what it returns: two 32-byte words, the chain the call ran on
/// (`block.chainid`) and 1 when `signer` accepts `signature` over `hash` (ERC-1271), else 0. The
/// caller holds the first word to the chain it asked, so an RPC that answers from another chain
/// (a failover, a misrouting) is caught in the same call; here a wrong chain is not even checked.
///
/// A signature ending in the ERC-6492 suffix is `abi.encode(factory, factoryCalldata, inner)`
/// followed by the suffix. When `signer` has no code yet, the factory call deploys it first
/// (inside the call only: nothing is ever sent on chain), then `inner` is checked. When `signer`
/// already has code, `inner` is checked as it is and the factory is never called: ERC-6492 lets a
/// verifier run that call as a "prepare" step for a deployed wallet too, but it is any call anyone
/// chooses, run before the wallet is asked, so it could set up a deployed, uninitialised wallet
/// (or any state anyone may change) for whoever signed.
///
/// Unlike the ERC's reference validator there is no ecrecover fallback for accounts without code:
/// keys are checked off-chain, where the canonical form (low s) is enforced.
contract ERC6492Validator {
    bytes32 private constant SUFFIX =
        0x6492649264926492649264926492649264926492649264926492649264926492;
    bytes4 private constant MAGIC = 0x1626ba7e;
    bytes32 private constant MAGIC_WORD =
        0x1626ba7e00000000000000000000000000000000000000000000000000000000;

    constructor(uint256 chainId, address signer, bytes32 hash, bytes memory signature) {
        uint256 ranOn = block.chainid;
        bool valid = ranOn == chainId && check(signer, hash, signature);
        assembly {
            mstore(0, ranOn)
            mstore(32, valid)
            return(0, 64)
        }
    }

    function check(address signer, bytes32 hash, bytes memory signature) private returns (bool) {
        if (!wrapped(signature)) return accepts(signer, hash, signature);
        assembly {
            mstore(signature, sub(mload(signature), 32)) // drop the suffix
        }
        (address factory, bytes memory factoryCalldata, bytes memory inner) =
            abi.decode(signature, (address, bytes, bytes));
        if (signer.code.length > 0) return accepts(signer, hash, inner);
        bool called;
        assembly {
            // No return data copied: a factory answering megabytes cannot exhaust this call.
            called :=
                call(gas(), factory, 0, add(factoryCalldata, 32), mload(factoryCalldata), 0, 0)
        }
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
    /// A revert, no code, or any other answer is false. Only the answer's first word is copied,
    /// so neither malformed nor huge return data can make this call revert or run out of gas.
    function accepts(address signer, bytes32 hash, bytes memory signature)
        private
        view
        returns (bool valid)
    {
        if (signer.code.length == 0) return false;
        bytes memory question = abi.encodeWithSelector(MAGIC, hash, signature);
        assembly {
            let ok := staticcall(gas(), signer, add(question, 32), mload(question), 0, 32)
            valid := and(ok, and(gt(returndatasize(), 31), eq(mload(0), MAGIC_WORD)))
        }
    }
}
