/**
 * Bytes as hex and base64: the engine's own codecs (`Uint8Array.prototype.toHex`, `fromHex`,
 * `toBase64`, `fromBase64`: V8 14) where the runtime has them, JavaScript where it does not, each
 * chosen on its own when this module loads. Supabase's Edge Runtime has trailed Deno's releases (it
 * served Deno 2.1 in 2025), so a deployed function must not depend on them:
 * `tests/older_runtime_test.ts` runs the functions on Deno 2.1, and `tests/edge_shape_test.ts`
 * runs the api function with the codecs removed.
 */

interface NativeEncoders {
  toHex?: (this: Uint8Array) => string;
  toBase64?: (this: Uint8Array, options?: { alphabet?: string; omitPadding?: boolean }) => string;
}
interface NativeDecoders {
  fromHex?: (text: string) => Uint8Array<ArrayBuffer>;
  fromBase64?: (text: string) => Uint8Array<ArrayBuffer>;
}
const nativeEncoders = Uint8Array.prototype as NativeEncoders;
const nativeDecoders = Uint8Array as NativeDecoders;

const HEX_DIGITS = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"));

/** A hex digit's value by its character code, -1 for any other character. */
const NIBBLES = Int8Array.from(
  { length: 128 },
  (_, code) => "0123456789abcdef".indexOf(String.fromCharCode(code).toLowerCase()),
);

/** Lower-case hex, two digits a byte, as `toHex` writes it. */
function toHexInJavaScript(bytes: Uint8Array): string {
  let text = "";
  for (const byte of bytes) text += HEX_DIGITS[byte];
  return text;
}

/** Either case; throws SyntaxError, as `fromHex` does, for an odd length or a non-hex character. */
function fromHexInJavaScript(text: string): Uint8Array<ArrayBuffer> {
  if (text.length % 2 !== 0) throw new SyntaxError("Input is not a valid hex string");
  const bytes = new Uint8Array(text.length / 2);
  for (let i = 0; i < bytes.length; i++) {
    const high = NIBBLES[text.charCodeAt(2 * i)] ?? -1;
    const low = NIBBLES[text.charCodeAt(2 * i + 1)] ?? -1;
    if (high < 0 || low < 0) throw new SyntaxError("Input is not a valid hex string");
    bytes[i] = (high << 4) | low;
  }
  return bytes;
}

/** base64url without padding, in JavaScript. */
function toBase64UrlInJavaScript(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** Standard base64, padded or not; throws SyntaxError, as `fromBase64` does, for anything else. */
function fromBase64InJavaScript(text: string): Uint8Array<ArrayBuffer> {
  let binary: string;
  try {
    binary = atob(text);
  } catch {
    throw new SyntaxError("Input is not a valid base64 string");
  }
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

export const toHex: (bytes: Uint8Array) => string = nativeEncoders.toHex
  ? (bytes) => bytes.toHex()
  : toHexInJavaScript;

export const fromHex: (text: string) => Uint8Array<ArrayBuffer> = nativeDecoders.fromHex
  ? (text) => Uint8Array.fromHex(text)
  : fromHexInJavaScript;

/** URL-safe text: base64url without padding. */
export const toBase64Url: (bytes: Uint8Array) => string = nativeEncoders.toBase64
  ? (bytes) => bytes.toBase64({ alphabet: "base64url", omitPadding: true })
  : toBase64UrlInJavaScript;

export const fromBase64: (text: string) => Uint8Array<ArrayBuffer> = nativeDecoders.fromBase64
  ? (text) => Uint8Array.fromBase64(text)
  : fromBase64InJavaScript;
