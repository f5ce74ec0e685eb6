/**
 * Sign-In with Ethereum (EIP-4361) over an EIP-191 personal-sign signature: building the message a
 * wallet signs, and checking a signed one against this deployment's origins, chains, clock and
 * the signer's address. Nonce bookkeeping lives with the handler, in the database.
 */
import { checksumAddress, recoverPersonalSigner } from "./eth.ts";
import { ServiceError } from "../http/errors.ts";
import {
  ADDRESS,
  CHAIN_ID,
  DATE_TIME,
  HEADER,
  NONCE,
  REQUEST_ID,
  STATEMENT,
  URI,
} from "./siwe-grammar.ts";

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
  /** The scheme written before the domain ("https://app.example.com wants you…"), if any. */
  readonly scheme?: string;
  readonly requestId?: string;
  readonly resources?: readonly string[];
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

// The pieces of the EIP-4361 ABNF, with RFC 3986 for the domain (an authority), URIs and the
// request id. Hosts may be IP literals ("[::1]:8080", "[v7.x]") as RFC 3986 and the reference
// parser allow; an IPv6 literal must be a well-formed address (no zone id: RFC 3986 has none).
/**
 * A strict EIP-4361 parser: it accepts only messages that follow the ABNF line by line (EIP-55
 * address, fields in order, nothing before or after), i.e. a subset of what the reference parser
 * (`@spruceid/siwe-parser`, which wallets use to recognise sign-in requests) accepts. A lenient
 * parser would accept text a wallet does not recognise as a sign-in request, and so signs without
 * warning the creator that the requesting site is not the message's domain: the phishing relay that
 * the domain binding exists to stop.
 */
export function parseSiweMessage(message: string): SiweFields {
  const invalid = (why: string) =>
    new ServiceError("invalid_message", `Not an EIP-4361 message: ${why}.`);
  if (message.length > MAX_MESSAGE_LENGTH) throw invalid("too long");
  const lines = message.split("\n");
  if (/^(?:[A-Za-z][A-Za-z0-9+.-]*:\/\/)? wants you /.test(lines[0])) {
    throw invalid("the first line names no domain");
  }
  const header = HEADER.exec(lines[0]);
  if (header === null) throw invalid('the first line must be "<domain> wants you to sign in…"');
  const [, scheme, domain] = header;
  const address = lines[1] ?? "";
  if (!ADDRESS.test(address)) throw invalid("the second line must be the address");
  // EIP-55: the reference parser, and so the wallets, refuse a lowercase or mis-cased address.
  if (checksumAddress(address) !== address) {
    throw invalid("the address must be EIP-55 checksummed");
  }
  if (lines[2] !== "") throw invalid("a blank line must follow the address");

  // No statement: one more blank line. A statement: its line, then a blank line. An empty
  // statement (as the siwe package writes one): two blank lines.
  let next = 3;
  let statement: string | undefined;
  if (lines[3] === "" && lines[4] === "") {
    next = 5;
  } else if (lines[3] === "") {
    next = 4;
  } else {
    statement = lines[3];
    if (statement === undefined) throw invalid("it ends after the address");
    if (!STATEMENT.test(statement)) {
      throw invalid("the statement holds characters EIP-4361 does not allow");
    }
    if (lines[4] !== "") throw invalid("a blank line must follow the statement");
    next = 5;
  }

  const field = (title: string, required: boolean): string | undefined => {
    const line = lines[next];
    if (line !== undefined && line.startsWith(`${title}: `)) {
      next += 1;
      return line.slice(title.length + 2);
    }
    if (required) throw invalid(`"${title}: " expected in its place`);
    return undefined;
  };
  const uri = field("URI", true)!;
  if (!URI.test(uri)) throw invalid("URI is not an RFC 3986 URI");
  if (field("Version", true) !== "1") throw invalid("Version must be 1");
  const chainIdText = field("Chain ID", true)!;
  const chainId = Number(chainIdText);
  // Chain 0 is no EIP-155 chain, and no nonce is handed out for it.
  if (!CHAIN_ID.test(chainIdText) || !Number.isSafeInteger(chainId) || chainId === 0) {
    throw invalid("Chain ID must be a positive integer");
  }
  const nonce = field("Nonce", true)!;
  if (!NONCE.test(nonce)) throw invalid("Nonce must be at least 8 letters or digits");
  const issuedAt = dateTime(field("Issued At", true)!, "Issued At");
  const expirationText = field("Expiration Time", false);
  const notBeforeText = field("Not Before", false);
  const requestId = field("Request ID", false);
  if (requestId !== undefined && !REQUEST_ID.test(requestId)) throw invalid("bad Request ID");
  let resources: string[] | undefined;
  if (lines[next] === "Resources:") {
    resources = [];
    next += 1;
    while (lines[next]?.startsWith("- ")) {
      const resource = lines[next].slice(2);
      if (!URI.test(resource)) throw invalid("every resource must be an RFC 3986 URI");
      resources.push(resource);
      next += 1;
    }
  }
  if (next !== lines.length) throw invalid("unexpected text after the last field");

  function dateTime(text: string, title: string): Date {
    const match = DATE_TIME.exec(text);
    const date = new Date(text);
    if (match === null || Number.isNaN(date.getTime())) {
      throw invalid(`${title} must be an RFC 3339 date-time`);
    }
    const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number);
    const [offsetHour, offsetMinute] = match.slice(7, 9).map((v) => Number(v ?? 0));
    const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
    if (
      month < 1 || month > 12 || day < 1 || day > daysInMonth || hour > 23 || minute > 59 ||
      second > 59 || offsetHour > 23 || offsetMinute > 59
    ) {
      throw invalid(`${title} is not a real date and time`);
    }
    return date;
  }

  return {
    address: address as `0x${string}`,
    domain,
    uri,
    chainId,
    nonce,
    issuedAt,
    ...(scheme === undefined ? {} : { scheme }),
    ...(statement === undefined ? {} : { statement }),
    ...(expirationText === undefined
      ? {}
      : { expirationTime: dateTime(expirationText, "Expiration Time") }),
    ...(notBeforeText === undefined ? {} : { notBefore: dateTime(notBeforeText, "Not Before") }),
    ...(requestId === undefined ? {} : { requestId }),
    ...(resources === undefined ? {} : { resources }),
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
