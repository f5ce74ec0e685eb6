/**
 * The EIP-4361 message the wallet is asked to sign. The server builds it (with viem, from the nonce
 * it just stored and the account's EIP-55 checksummed address, which needs keccak-256 that browsers
 * do not ship); the client checks it against the structured fields of the same answer and the
 * connected account before showing it to the wallet, so the creator never signs something else.
 */

/** The body of `POST /auth/nonce`. */
export interface NonceResponse {
  readonly nonce: string;
  readonly issuedAt: string;
  readonly expiresAt: string;
  readonly domain: string;
  readonly uri: string;
  readonly chainId: number;
  readonly version: string;
  readonly statement: string;
  /** Present when the request named the address. */
  readonly message?: string;
}

const PREAMBLE = " wants you to sign in with your Ethereum account:";

/** Returns the reason the message does not match, or null when it does. */
export function signInMessageMismatch(
  message: string,
  expected: { readonly nonce: NonceResponse; readonly address: string },
): string | null {
  const lines = message.split("\n");
  const { nonce, address } = expected;
  if (lines[0] !== `${nonce.domain}${PREAMBLE}`) return "domain";
  if (lines[1]?.toLowerCase() !== address.toLowerCase()) return "address";
  const fields = new Map<string, string>();
  for (const line of lines.slice(2)) {
    const colon = line.indexOf(": ");
    if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 2));
  }
  const wanted: Array<[string, string]> = [
    ["URI", nonce.uri],
    ["Version", "1"],
    ["Chain ID", String(nonce.chainId)],
    ["Nonce", nonce.nonce],
    ["Issued At", nonce.issuedAt],
    ["Expiration Time", nonce.expiresAt],
  ];
  for (const [field, value] of wanted) {
    if (fields.get(field) !== value) return field;
  }
  if (nonce.statement && !lines.includes(nonce.statement)) return "statement";
  return null;
}
