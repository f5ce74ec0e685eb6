/**
 * Sign-In with Ethereum (EIP-4361) over an EIP-191 personal-sign signature: building the message a
 * wallet signs, and checking a signed one against this deployment's origins, chains, clock and
 * the signer's address. Nonce bookkeeping lives with the handler, in the database.
 */
import { checksumAddress, recoverPersonalSigner } from "./eth.ts";
import { ServiceError } from "../http/errors.ts";
import { parseSiweMessage, type SiweFields, STATEMENT } from "./siwe-parser.ts";

export type { SiweFields };

export interface SiwePolicy {
  /** Origins (scheme://host[:port]) whose host is an accepted `domain` and that `uri` must be under. */
  readonly origins: readonly string[];
  /** null: any chain. */
  readonly chainIds: readonly number[] | null;
  readonly now: Date;
  /** How far in the future `issuedAt` may be, for wallets whose clocks run ahead. */
  readonly clockSkewMs: number;
}

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

/** The EIP-4361 text for `fields`, laid out exactly as viem's createSiweMessage and the siwe package do. */
export function buildSiweMessage(fields: SiweFields): string {
  const origin = fields.scheme ? `${fields.scheme}://${fields.domain}` : fields.domain;
  const lines = [
    `${origin} wants you to sign in with your Ethereum account:`,
    checksumAddress(fields.address),
    "",
    ...(fields.statement ? [fields.statement, ""] : [""]),
    `URI: ${fields.uri}`,
    "Version: 1",
    `Chain ID: ${fields.chainId}`,
    `Nonce: ${fields.nonce}`,
    `Issued At: ${fields.issuedAt.toISOString()}`,
  ];
  if (fields.expirationTime) lines.push(`Expiration Time: ${fields.expirationTime.toISOString()}`);
  if (fields.notBefore) lines.push(`Not Before: ${fields.notBefore.toISOString()}`);
  if (fields.requestId) lines.push(`Request ID: ${fields.requestId}`);
  if (fields.resources) lines.push("Resources:", ...fields.resources.map((r) => `- ${r}`));
  return lines.join("\n");
}

/** `text` without the characters an EIP-4361 statement may not hold (it is one line of URI characters). */
export function toStatement(text: string): string {
  return [...text].filter((c) => STATEMENT.test(c)).join("").trim();
}

/** Parses and checks everything but the signature and nonce, in the order the errors are reported. */
export function checkSiweMessage(message: string, policy: SiwePolicy): SiweFields {
  const fields = parseSiweMessage(message);
  // The origins this message's first line names: host[:port] equal, and the scheme when it has one.
  const candidates = policy.origins.filter((o) => {
    const url = new URL(o);
    return url.host === fields.domain &&
      (fields.scheme === undefined || url.protocol === `${fields.scheme.toLowerCase()}:`);
  });
  if (candidates.length === 0) {
    throw new ServiceError("domain_not_allowed", "The message was made for another site.");
  }
  if (!candidates.some((origin) => uriUnderOrigin(fields.uri, origin))) {
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
  // Not Before is the client's clock, like Issued At, and gets the same skew: a message made with
  // both set to its "now" must not be refused for a wallet clock a few seconds fast. Expiration
  // gets none: the server's clock ends a message.
  if (fields.notBefore !== undefined && fields.notBefore.getTime() > now + policy.clockSkewMs) {
    throw new ServiceError("message_not_yet_valid", "The message is not valid yet.");
  }
  return fields;
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
export function verifySignature(
  message: string,
  signature: string,
  address: string,
): void {
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
    signer = recoverPersonalSigner(message, signature as `0x${string}`);
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
