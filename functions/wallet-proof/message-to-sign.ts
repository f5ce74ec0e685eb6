/**
 * What sign-in and the creator's confirmations ask a wallet to sign: the origins and chains they
 * accept, and the EIP-4361 message a nonce answers with.
 */
import { checksumAddress } from "../_shared/auth/eth.ts";
import { buildSiweMessage } from "../_shared/auth/siwe.ts";
import { ServiceError } from "../_shared/http/errors.ts";

/** The origins a sign-in message may name (nonce, proof); none configured refuses sign-in. */
export function requireOrigins(signInOrigins: readonly string[]): readonly string[] {
  if (signInOrigins.length === 0) {
    throw new ServiceError("not_configured", "Sign-in is not configured: set ALLOWED_ORIGINS.");
  }
  return signInOrigins;
}

/** A chain a nonce is asked for: chain_not_allowed unless sign-in accepts it (null: any). */
export function requireAllowedChain(
  chainId: number | undefined,
  allowedChains: readonly number[] | null,
): void {
  if (chainId !== undefined && allowedChains !== null && !allowedChains.includes(chainId)) {
    throw new ServiceError("chain_not_allowed", "Sign-in from this chain is not accepted.", {
      allowedChainIds: allowedChains,
    });
  }
}

/** A nonce's message to sign, but for the origin it names and the signer's address. */
export interface MessageToSign {
  readonly chainId: number;
  readonly nonce: string;
  readonly issuedAt: Date;
  readonly expiresAt: Date;
  readonly statement: string;
  /** EIP-4361 resources: what the act applies to (the sessions a sign-out ends). */
  readonly resources?: readonly string[];
}

/**
 * A nonce answer's fields (every field of the message to sign), and the whole EIP-4361 message
 * for an address (any case; written EIP-55 checksummed). The message names the page's own origin
 * when it is one of `origins`, else the first: the caller cannot widen the list (outside
 * production, a loopback page's own origin is accepted: local-origins.ts).
 */
export function nonceMessage(
  request: Request,
  origins: readonly string[],
  message: MessageToSign,
) {
  const requestOrigin = request.headers.get("origin");
  const origin = origins.find((o) => o === requestOrigin) ?? origins[0];
  const domain = new URL(origin).host;
  return {
    fields: {
      nonce: message.nonce,
      issuedAt: message.issuedAt.toISOString(),
      expiresAt: message.expiresAt.toISOString(),
      domain,
      uri: origin,
      chainId: message.chainId,
      version: "1" as const,
      statement: message.statement,
      ...(message.resources === undefined ? {} : { resources: [...message.resources] }),
    },
    forAddress: (address: string): string =>
      buildSiweMessage({
        domain,
        uri: origin,
        chainId: message.chainId,
        nonce: message.nonce,
        issuedAt: message.issuedAt,
        expirationTime: message.expiresAt,
        statement: message.statement,
        ...(message.resources === undefined ? {} : { resources: message.resources }),
        address: checksumAddress(address),
      }),
  };
}
