/**
 * Sign-In with Ethereum (EIP-4361) over an EIP-191 personal-sign signature: building the message a
 * wallet signs, and checking a signed one against this deployment's origins, chains, clock and
 * the signer's address. Nonce bookkeeping lives with the handler, in the database.
 */
import { type Hex, isAddress, recoverMessageAddress } from "viem";
import { createSiweMessage, parseSiweMessage } from "viem/siwe";
import { ServiceError } from "./errors.ts";

export interface SiweFields {
  readonly address: `0x${string}`;
  readonly domain: string;
  readonly uri: string;
  readonly chainId: number;
  readonly nonce: string;
  readonly issuedAt: Date;
  readonly expirationTime?: Date;
  readonly notBefore?: Date;
  readonly statement?: string;
}

export interface SiwePolicy {
  /** Origins (scheme://host[:port]) whose host is an accepted `domain` and that `uri` must be under. */
  readonly origins: readonly string[];
  /** null: any chain. */
  readonly chainIds: readonly number[] | null;
  readonly now: Date;
  /** How far in the future `issuedAt` may be, for wallets whose clocks run ahead. */
  readonly clockSkewMs: number;
}

export const MAX_MESSAGE_LENGTH = 4096;
const NONCE_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const NONCE_LENGTH = 32;
// secp256k1 group order n / 2: a signature with s above it is the malleable twin of a valid one.
const SECP256K1_HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;

/** 32 characters from the CSPRNG, without modulo bias (rejection sampling), ~190 bits. */
export function generateNonce(): string {
  const limit = 256 - (256 % NONCE_ALPHABET.length);
  let nonce = "";
  while (nonce.length < NONCE_LENGTH) {
    for (const byte of crypto.getRandomValues(new Uint8Array(48))) {
      if (byte < limit && nonce.length < NONCE_LENGTH) {
        nonce += NONCE_ALPHABET[byte % NONCE_ALPHABET.length];
      }
    }
  }
  return nonce;
}

export function buildSiweMessage(fields: SiweFields): string {
  return createSiweMessage({ ...fields, version: "1" });
}

/** Parses and checks everything but the signature and nonce, in the order the errors are reported. */
export function checkSiweMessage(message: string, policy: SiwePolicy): SiweFields {
  const fields = parse(message);
  const origin = policy.origins.find((o) => new URL(o).host === fields.domain);
  if (origin === undefined) {
    throw new ServiceError("domain_not_allowed", "The message was made for another site.");
  }
  if (!uriUnderOrigin(fields.uri, origin)) {
    throw new ServiceError("uri_not_allowed", "The message's URI does not belong to this site.");
  }
  if (policy.chainIds !== null && !policy.chainIds.includes(fields.chainId)) {
    throw new ServiceError("chain_not_allowed", "Sign-in from this chain is not accepted.", {
      allowedChainIds: policy.chainIds,
    });
  }
  const now = policy.now.getTime();
  if (fields.issuedAt.getTime() > now + policy.clockSkewMs) {
    throw new ServiceError("issued_in_future", "The message's issue time is in the future.");
  }
  if (fields.expirationTime !== undefined && fields.expirationTime.getTime() <= now) {
    throw new ServiceError("message_expired", "The message has expired; sign a new one.");
  }
  if (fields.notBefore !== undefined && fields.notBefore.getTime() > now) {
    throw new ServiceError("message_not_yet_valid", "The message is not valid yet.");
  }
  return fields;
}

function parse(message: string): SiweFields {
  const invalid = (why: string) =>
    new ServiceError("invalid_message", `Not an EIP-4361 message: ${why}.`);
  if (message.length > MAX_MESSAGE_LENGTH) throw invalid("too long");
  let parsed;
  try {
    parsed = parseSiweMessage(message);
  } catch {
    throw invalid("unreadable");
  }
  const { address, domain, uri, chainId, nonce, issuedAt, version } = parsed;
  if (
    !/^[^\s]+ wants you to sign in with your Ethereum account:\n0x[0-9a-fA-F]{40}\n/.test(message)
  ) {
    throw invalid("missing the EIP-4361 preamble");
  }
  if (address === undefined || !isAddress(address, { strict: true })) throw invalid("bad address");
  if (version !== "1") throw invalid("Version must be 1");
  if (!domain || !uri || typeof chainId !== "number" || !nonce) {
    throw invalid("domain, URI, Chain ID and Nonce are required");
  }
  if (!/^[A-Za-z0-9]{8,}$/.test(nonce)) throw invalid("bad nonce");
  if (!(issuedAt instanceof Date) || Number.isNaN(issuedAt.getTime())) {
    throw invalid("Issued At is required");
  }
  for (const date of [parsed.expirationTime, parsed.notBefore]) {
    if (date !== undefined && Number.isNaN(date.getTime())) throw invalid("bad timestamp");
  }
  return {
    address,
    domain,
    uri,
    chainId,
    nonce,
    issuedAt,
    expirationTime: parsed.expirationTime,
    notBefore: parsed.notBefore,
    statement: parsed.statement,
  };
}

function uriUnderOrigin(uri: string, origin: string): boolean {
  try {
    return new URL(uri).origin === origin;
  } catch {
    return false;
  }
}

/**
 * Checks the EIP-191 personal-sign signature recovers to `address`. Only canonical 65-byte
 * signatures are accepted: no compact form, no high-s twin, v in {0, 1, 27, 28}.
 */
export async function verifySignature(
  message: string,
  signature: string,
  address: string,
): Promise<void> {
  if (!/^0x[0-9a-fA-F]{130}$/.test(signature)) {
    throw new ServiceError("invalid_signature", "The signature must be 65 bytes of hex.");
  }
  const s = BigInt(`0x${signature.slice(66, 130)}`);
  const v = Number.parseInt(signature.slice(130, 132), 16);
  if (s === 0n || s > SECP256K1_HALF_N || ![0, 1, 27, 28].includes(v)) {
    throw new ServiceError("invalid_signature", "The signature is not canonical.");
  }
  let signer: string;
  try {
    signer = await recoverMessageAddress({ message, signature: signature as Hex });
  } catch {
    throw new ServiceError("invalid_signature", "The signature cannot be verified.");
  }
  if (signer.toLowerCase() !== address.toLowerCase()) {
    throw new ServiceError(
      "signature_mismatch",
      "The signature was not made by the message's address.",
    );
  }
}
