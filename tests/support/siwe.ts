/** Sign-in and confirmation nonces as the service answers them, and the messages built from them. */
import { createSiweMessage } from "viem/siwe";

/** A nonce answer's fields (docs/api.md): a sign-in nonce, or a confirmation's without `purpose`. */
export interface NonceAnswer {
  nonce: string;
  issuedAt: string;
  expiresAt: string;
  domain: string;
  uri: string;
  chainId: number;
  version: string;
  statement: string;
  message: string;
}

/** The EIP-4361 message a viem client builds from a nonce answer's fields, with `overrides`. */
export function messageFor(
  answer: Omit<NonceAnswer, "message">,
  address: `0x${string}`,
  overrides: Partial<Parameters<typeof createSiweMessage>[0]> = {},
): string {
  return createSiweMessage({
    domain: answer.domain,
    address,
    statement: answer.statement,
    uri: answer.uri,
    version: "1",
    chainId: answer.chainId,
    nonce: answer.nonce,
    issuedAt: new Date(answer.issuedAt),
    expirationTime: new Date(answer.expiresAt),
    ...overrides,
  });
}
