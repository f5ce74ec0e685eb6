/**
 * Escapes (`\n`, `\"`, `\u0022`, `\U00000022`, `\x22`, `\042`), HTML numeric character
 * references (`&#34;`, `&#x22;`) and percent-encodings (`%3D`, twice: `%253D`) in a line: blanked,
 * so what is written around them is read as written, or decoded, so a key written through them
 * reads whole.
 */

/**
 * Characters written as an escape (`\n`, `\"`, `\u0022`, `\u{22}`, `\U00000022`, `\x22`, octal
 * `\042` in JSON strings, notebooks, HAR files, source code, shell `printf`), as an HTML numeric
 * character reference (`&#34;`, `&#x22;`), or percent-encoded (`%3D`, `%20` in URLs).
 * Percent-encodings count when ASCII or a whole UTF-8 character (`%E2%80%9C`), never a lone
 * `%DE…`, which is how `%DEV_KEY%` (a Windows variable reference, not a value) starts.
 */
const PERCENT = String.raw`%[0-7][0-9A-Fa-f]|%[C-Fc-f][0-9A-Fa-f](?:%[89ABab][0-9A-Fa-f]){1,3}`;
const ENCODED = String.raw`\\(?:[nrtbf"'\\/]|u[0-9a-fA-F]{4}|u\{[0-9a-fA-F]{1,6}\}` +
  String.raw`|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{2}|[0-3][0-7]{2})` +
  String.raw`|&#[0-9]{1,7};|&#[xX][0-9a-fA-F]{1,6};|${PERCENT}`;
const ENCODED_CHARACTER = new RegExp(ENCODED, "g");
const HAS_ENCODED_CHARACTER = new RegExp(ENCODED);
/** A percent-encoding decoded once still encoded (`%252D` is `%2D`), as a URL in a URL is. */
const PERCENT_ENCODED = new RegExp(PERCENT, "g");

/** Whether the text holds an escape or an encoding: most lines do not, and need neither pass. */
export function hasEncodings(text: string): boolean {
  return HAS_ENCODED_CHARACTER.test(text);
}

/** An escaped double quote, as JSON or HTML writes one inside a string. */
const ESCAPED_QUOTE = /^(?:\\(?:"|u0022|U00000022|x22|042)|&#0*34;|&#x0*22;)$/i;
/** What may follow a closing quote: the end, space, or what separates or closes a value. */
const AFTER_CLOSING_QUOTE = /^(?:$|[\s:,;=}\]\\)])/;

/**
 * The text with each escape and percent-encoding overwritten by spaces of the same length: the
 * last character of an encoding (the `n` of `\n`, the `D` of `%3D`) is a letter or digit that
 * would otherwise glue to a key written right after it, and columns stay those of the text. An
 * escaped double quote stays a quote, next to what it quotes (last when it opens, first when it
 * closes), so JSON held in a JSON string (`"{\"API_KEY\": \"…\"}"`) still quotes its values: a
 * quoted value is a literal even in code. decodeEncodings reads the same text the other way.
 */
export function blankEncodings(text: string): string {
  return text.replace(ENCODED_CHARACTER, (encoded, offset: number) => {
    const blank = " ".repeat(encoded.length - 1);
    const before = text[offset - 1];
    const after = text.charAt(offset + encoded.length);
    // Beside a real quote (`"\"<key>\""`), the real one quotes the value: blanked like any escape.
    if (!ESCAPED_QUOTE.test(encoded) || before === '"' || after === '"') return `${blank} `;
    return AFTER_CLOSING_QUOTE.test(after) ? `"${blank}` : `${blank}"`;
  });
}

const SIMPLE_ESCAPES: Record<string, string> = {
  n: "\n",
  r: "\r",
  t: "\t",
  b: "\b",
  f: "\f",
};
const utf8 = new TextDecoder("utf-8", { fatal: true });

/** What one escape or percent-encoding stands for; null when it stands for no character. */
function decodeOne(encoded: string): string | null {
  if (encoded[0] === "&") {
    const hex = encoded[2] === "x" || encoded[2] === "X";
    const code = parseInt(encoded.slice(hex ? 3 : 2, -1), hex ? 16 : 10);
    return code <= 0x10ffff ? String.fromCodePoint(code) : null;
  }
  if (encoded[0] === "%") {
    if (encoded.length === 3) return String.fromCharCode(parseInt(encoded.slice(1), 16));
    const bytes = Uint8Array.from(encoded.slice(1).split("%"), (hex) => parseInt(hex, 16));
    try {
      return utf8.decode(bytes);
    } catch {
      return null;
    }
  }
  const kind = encoded[1];
  if (kind === "x") return String.fromCharCode(parseInt(encoded.slice(2), 16));
  if (kind >= "0" && kind <= "3") return String.fromCharCode(parseInt(encoded.slice(1), 8));
  if (kind === "U") {
    const code = parseInt(encoded.slice(2), 16);
    return code <= 0x10ffff ? String.fromCodePoint(code) : null;
  }
  if (kind === "u") {
    const code = parseInt(encoded.replace(/^\\u\{?|\}$/g, ""), 16);
    return code <= 0x10ffff ? String.fromCodePoint(code) : null;
  }
  return SIMPLE_ESCAPES[kind] ?? kind;
}

/**
 * The text with its escapes and percent-encodings read as the characters they stand for (a key
 * written `\u0073\u006b…` or `sk%2Dproj%2D…` reads whole), or null when it has none; what `%25`
 * left percent-encoded is decoded again. `origin[i]` is where the i-th character came from in
 * `text` (`origin[decoded.length]` is its end).
 */
export function decodeEncodings(text: string): { text: string; origin: Int32Array } | null {
  if (!hasEncodings(text)) return null;
  const once = decodeAll(text, ENCODED_CHARACTER);
  if (!/%25/.test(text)) return once;
  const twice = decodeAll(once.text, PERCENT_ENCODED);
  return { text: twice.text, origin: twice.origin.map((i) => once.origin[i]) };
}

function decodeAll(text: string, pattern: RegExp): { text: string; origin: Int32Array } {
  const parts: string[] = [];
  const origins: number[] = [];
  let from = 0;
  const copy = (end: number) => {
    parts.push(text.slice(from, end));
    for (let i = from; i < end; i++) origins.push(i);
  };
  for (const match of text.matchAll(pattern)) {
    const decoded = decodeOne(match[0]);
    if (decoded === null) continue;
    copy(match.index);
    parts.push(decoded);
    for (let i = 0; i < decoded.length; i++) origins.push(match.index);
    from = match.index + match[0].length;
  }
  copy(text.length);
  origins.push(text.length);
  return { text: parts.join(""), origin: Int32Array.from(origins) };
}
