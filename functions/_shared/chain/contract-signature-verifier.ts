/**
 * The contract-wallet check a handler depends on, as an interface with no imports, so the service
 * context can name it without carrying its implementation (contract-signatures.ts) into every
 * function's bundle.
 */

export interface ContractSignatureCheck {
  readonly chainId: number;
  /** The wallet: the message's address. */
  readonly address: string;
  /** The EIP-191 hash of the exact message bytes. */
  readonly hash: Uint8Array;
  readonly signature: Uint8Array;
  readonly signal: AbortSignal;
}

export interface ContractSignatureVerifier {
  /** Chains with an RPC: the only ones contract wallets can sign in on. */
  readonly chainIds: readonly number[];
  /** True when the wallet accepts the signature; throws `chain_unavailable` when the chain cannot say. */
  verify(check: ContractSignatureCheck): Promise<boolean>;
}
