// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// Wallets for the contract-wallet sign-in tests. Not for any real use.

/// ERC-1271 wallet: a 65-byte ECDSA signature of the hash itself by any of its owners. ecrecover
/// accepts high-s signatures, as many deployed wallets do.
contract OwnerWallet {
    mapping(address => bool) public isOwner;

    constructor(address[] memory owners) {
        for (uint256 i = 0; i < owners.length; i++) {
            isOwner[owners[i]] = true;
        }
    }

    function isValidSignature(bytes32 hash, bytes calldata signature)
        external
        view
        returns (bytes4)
    {
        if (signature.length != 65) return 0xffffffff;
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        if (v < 27) v += 27;
        address signer = ecrecover(hash, v, r, s);
        return signer != address(0) && isOwner[signer] ? bytes4(0x1626ba7e) : bytes4(0xffffffff);
    }
}

/// A deployed wallet whose owner is whoever calls `initialize` first: a proxy whose setup call was
/// never sent. Until then it accepts no signature.
contract UninitializedWallet {
    address public owner;

    function initialize(address newOwner) external {
        require(owner == address(0), "UninitializedWallet: already initialized");
        owner = newOwner;
    }

    function isValidSignature(bytes32 hash, bytes calldata signature)
        external
        view
        returns (bytes4)
    {
        if (owner == address(0) || signature.length != 65) return 0xffffffff;
        uint8 v = uint8(signature[64]);
        if (v < 27) v += 27;
        address signer = ecrecover(hash, v, bytes32(signature[0:32]), bytes32(signature[32:64]));
        return signer == owner ? bytes4(0x1626ba7e) : bytes4(0xffffffff);
    }
}

/// A wallet whose check always reverts.
contract RevertingWallet {
    function isValidSignature(bytes32, bytes calldata) external pure returns (bytes4) {
        revert("RevertingWallet: never valid");
    }
}

/// CREATE2 factory: a one-owner OwnerWallet per (owner, salt), at an address known before it exists.
contract WalletFactory {
    function deploy(address owner, bytes32 salt) external returns (address wallet) {
        wallet = predict(owner, salt);
        if (wallet.code.length > 0) return wallet;
        address[] memory owners = new address[](1);
        owners[0] = owner;
        wallet = address(new OwnerWallet{salt: salt}(owners));
    }

    function predict(address owner, bytes32 salt) public view returns (address) {
        address[] memory owners = new address[](1);
        owners[0] = owner;
        bytes32 initCodeHash =
            keccak256(abi.encodePacked(type(OwnerWallet).creationCode, abi.encode(owners)));
        return address(
            uint160(
                uint256(keccak256(abi.encodePacked(bytes1(0xff), address(this), salt, initCodeHash)))
            )
        );
    }
}
