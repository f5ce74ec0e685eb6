/**
 * The EIP-4361 message grammar as regular expressions: RFC 3986's URI and authority rules, rule by
 * rule, and the message's own fields. siwe.ts parses with them.
 */

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

export const HEADER = new RegExp(
  `^(?:([A-Za-z][A-Za-z0-9+.-]*)://)?(${DOMAIN}) wants you to sign in with your Ethereum account:$`,
);
export const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
export const STATEMENT = /^[A-Za-z0-9 !#$&'()*+,\-./:;=?@[\]_~]*$/;
export const URI = new RegExp(`^${URI_TEXT}$`);
export const NONCE = /^[A-Za-z0-9]{8,}$/;
export const CHAIN_ID = /^[0-9]{1,16}$/;
export const REQUEST_ID = new RegExp(`^${PCHAR}*$`);
export const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:Z|[+-](\d{2}):(\d{2}))$/;
