/**
 * The contract-wallet leg of a sign-in: taken only when the signature is not the message
 * address's own key (a key's sign-in never comes here, and pays nothing for it). In order:
 *
 * 1. the signature's form (hex, 1 byte to 16 KB);
 * 2. an RPC for the message's chain (none: contract wallets cannot sign in there, 401);
 * 3. one database call: the nonce checked but not spent (and put to the chain at most
 *    MAX_CHECKS_PER_NONCE times), and the RPC call counted against the client IP's budget, the
 *    client's budget for this wallet, and the wallet's cap every client shares, so neither a
 *    spent nonce nor a flood of bad proofs ever reaches the chain, and no one client can use up
 *    the wallet's budget and keep its owner out;
 * 4. the wallet asked on the chain the message names (ERC-1271, or ERC-6492 for a wrapped
 *    signature), in one call that also proves which chain answered, under one deadline. The
 *    chain unreachable or another chain answering: 503 with Retry-After, the nonce still unspent.
 *    The wallet saying no, or reverting: 401.
 */
import { hexToBytes } from "@noble/hashes/utils";
import type { ServiceContext } from "../_shared/context.ts";
import { createChainRpc } from "../_shared/chain/chain-rpc.ts";
import {
  createContractSignatureVerifier,
  MAX_CONTRACT_SIGNATURE_BYTES,
} from "../_shared/chain/contract-signatures.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import { personalMessageHash } from "../_shared/auth/eth.ts";
import { clientIp, rateLimited } from "../_shared/auth/rate-limit.ts";
import { prefixBudget } from "../_shared/config/limits.ts";
import type { SiweFields } from "../_shared/auth/siwe.ts";
import { admitContractCheck } from "./sign-in-store.ts";

const SIGNATURE = new RegExp(`^0x(?:[0-9a-fA-F]{2}){1,${MAX_CONTRACT_SIGNATURE_BYTES}}$`);
// A failed check spends no nonce (the chain may only have been down), so without a cap one nonce
// would carry a stranger's bad proofs for its whole life. Three covers a client's retries after
// 503s (docs/contract-wallets.md's example tries three times).
const MAX_CHECKS_PER_NONCE = 3;

export type ContractProofCheck = (
  request: Request,
  fields: SiweFields,
  message: string,
  signature: string,
) => Promise<void>;

export function createContractProofCheck(context: ServiceContext): ContractProofCheck {
  const { config, db, log } = context;
  const chainVerifier = context.chainVerifier ??
    createContractSignatureVerifier(createChainRpc(config.chainRpcUrls, { log }));
  const rpcChains = new Set(chainVerifier.chainIds);
  // A chain this service lists is named; any other is the caller's text, and no error repeats
  // what was sent (a number pasted into Chain ID may be a secret).
  const chainName = (chainId: number) =>
    config.allowedChainIds?.includes(chainId) || rpcChains.has(chainId)
      ? `chain ${chainId}`
      : "the message's chain";

  return async (request, fields, message, signature) => {
    if (!SIGNATURE.test(signature)) {
      throw new ServiceError(
        "invalid_signature",
        "The signature must be 0x-prefixed hex: 65 bytes from a wallet's key, " +
          `or up to ${MAX_CONTRACT_SIGNATURE_BYTES} bytes from a contract wallet.`,
      );
    }
    if (!rpcChains.has(fields.chainId)) {
      throw new ServiceError(
        "signature_mismatch",
        "The signature was not made by the message's address. If that address is a contract " +
          `wallet: contract wallets need an RPC for ${chainName(fields.chainId)}, and this ` +
          "service has none.",
      );
    }
    const walletAddress = fields.address.toLowerCase();
    const admitted = await admitContractCheck(db, {
      nonce: fields.nonce,
      walletAddress,
      chainId: fields.chainId,
      client: clientIp(request, config.clientIp),
      perClient: prefixBudget(config.rateLimits, "rpcPerIpPerMinute", "client"),
      perWallet: prefixBudget(config.rateLimits, "rpcPerAddressPerMinute", "wallet"),
      perWalletPerClient: prefixBudget(
        config.rateLimits,
        "rpcPerAddressPerClientPerMinute",
        "walletClient",
      ),
      checksPerNonce: MAX_CHECKS_PER_NONCE,
    });
    if (admitted.outcome === "rate_limited") throw rateLimited(admitted.retry_after ?? 1);
    if (admitted.outcome !== "ok") throw nonceRefusal(admitted.outcome);
    const valid = await chainVerifier.verify({
      chainId: fields.chainId,
      address: walletAddress,
      hash: personalMessageHash(message),
      signature: hexToBytes(signature.slice(2)),
      signal: AbortSignal.timeout(config.chainRpcTimeoutMs),
    });
    if (!valid) {
      throw new ServiceError(
        "signature_mismatch",
        "The signature was not made by the message's address, and the contract wallet at that " +
          `address on ${chainName(fields.chainId)} does not accept it.`,
      );
    }
  };
}

/** The error for a nonce `public.nonce_refusal` refused. */
export function nonceRefusal(outcome: string): ServiceError {
  switch (outcome) {
    case "nonce_unknown":
      return new ServiceError("nonce_unknown", "This nonce was not issued here.");
    case "nonce_used":
      return new ServiceError("nonce_used", "This nonce has already been used.");
    case "nonce_exhausted":
      return new ServiceError(
        "nonce_used",
        `This nonce has been put to the wallet's chain ${MAX_CHECKS_PER_NONCE} times, as often ` +
          "as one nonce may be; request a new one.",
      );
    case "nonce_expired":
      return new ServiceError("nonce_expired", "This nonce has expired; request a new one.");
    case "nonce_mismatch":
      return new ServiceError(
        "nonce_mismatch",
        "This nonce was issued for another address or chain; request one for this wallet.",
      );
    case "nonce_purpose":
      // Issued for one act (or for sign-in) and presented for another (fresh-signature.ts).
      return new ServiceError(
        "purpose_mismatch",
        "This nonce was issued for another purpose; request one for this.",
      );
    default:
      throw new Error(`unexpected sign-in outcome ${outcome}`);
  }
}
