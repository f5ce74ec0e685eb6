/**
 * A strict EIP-4361 parser, and the grammar it parses by as regular expressions: RFC 3986's URI
 * and authority rules, rule by rule, and the message's own fields. siwe.ts checks what it parses.
 */
import { ServiceError } from "../http/errors.ts";
import { checksumAddress } from "./eth.ts";

/** An EIP-4361 message's fields, as parsed and as built. */
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

export const MAX_MESSAGE_LENGTH = 4096;

const UNRESERVED_SUBDELIM = "A-Za-z0-9\\-._~!$&'()*+,;=";
const PCT = "%[0-9A-Fa-f]{2}";
const PCHAR = `(?:[${UNRESERVED_SUBDELIM}:@]|${PCT})`;
const H16 = "[0-9A-Fa-f]{1,4}";
const DEC_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
const LS32 = `(?:${H16}:${H16}|${DEC_OCTET}(?:\\.${DEC_OCTET}){3})`;
/** RFC 3986's IPv6address, rule by rule: n groups before "::" (at most 6 - after), then the rest. */
const IPV6 = [
  `(?:${H16}:){6}${LS32}`,
  `::(?:${H16}:){5}${LS32}`,
  `(?:${H16})?::(?:${H16}:){4}${LS32}`,
  `(?:(?:${H16}:){0,1}${H16})?::(?:${H16}:){3}${LS32}`,
  `(?:(?:${H16}:){0,2}${H16})?::(?:${H16}:){2}${LS32}`,
  `(?:(?:${H16}:){0,3}${H16})?::${H16}:${LS32}`,
  `(?:(?:${H16}:){0,4}${H16})?::${LS32}`,
  `(?:(?:${H16}:){0,5}${H16})?::${H16}`,
  `(?:(?:${H16}:){0,6}${H16})?::`,
].map((rule) => `(?:${rule})`).join("|");
const IP_LITERAL = `\\[(?:${IPV6}|v[0-9A-Fa-f]+\\.[${UNRESERVED_SUBDELIM}:]+)\\]`;
const USERINFO = `(?:(?:[${UNRESERVED_SUBDELIM}:]|${PCT})*@)?`;
const REG_NAME = `(?:[${UNRESERVED_SUBDELIM}]|${PCT})`;
const PORT = "(?::[0-9]*)?";
/** An authority as URIs may have it: the host may be empty ("file:///x"). */
const AUTHORITY = `${USERINFO}(?:${IP_LITERAL}|${REG_NAME}*)${PORT}`;
/** The message's domain: an authority that names a host (an empty one can belong to no site). */
const DOMAIN = `${USERINFO}(?:${IP_LITERAL}|${REG_NAME}+)${PORT}`;
const SEGMENTS = `(?:/${PCHAR}*)*`;
const HIER_PART = `(?://${AUTHORITY}${SEGMENTS}|/(?:${PCHAR}+${SEGMENTS})?|${PCHAR}+${SEGMENTS}|)`;
const QUERY = `(?:${PCHAR}|[/?])*`;
const URI_TEXT = `[A-Za-z][A-Za-z0-9+.-]*:${HIER_PART}(?:\\?${QUERY})?(?:#${QUERY})?`;

const HEADER = new RegExp(
  `^(?:([A-Za-z][A-Za-z0-9+.-]*)://)?(${DOMAIN}) wants you to sign in with your Ethereum account:$`,
);
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
export const STATEMENT = /^[A-Za-z0-9 !#$&'()*+,\-./:;=?@[\]_~]*$/;
const URI = new RegExp(`^${URI_TEXT}$`);
const NONCE = /^[A-Za-z0-9]{8,}$/;
const CHAIN_ID = /^[0-9]{1,16}$/;
const REQUEST_ID = new RegExp(`^${PCHAR}*$`);
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:Z|[+-](\d{2}):(\d{2}))$/;

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
