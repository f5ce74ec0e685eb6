/**
 * Bytes as hex and base64: the engine's own codecs (`Uint8Array.prototype.toHex`, `fromHex`,
 * `toBase64`, `fromBase64`: V8 14) where the runtime has them, JavaScript where it does
 * not. Supabase's Edge Runtime has trailed Deno's releases (it served Deno 2.1 in 2025), so a
 * deployed function must not depend on them; `tests/edge_shape_test.ts` runs the functions with
 * them removed.
 */

interface NativeCodecs {
  toHex?: (this: Uint8Array) => string;
  toBase64?: (this: Uint8Array, options?: { alphabet?: string; omitPadding?: boolean }) => string;
}
interface NativeDecoders {
  fromHex?: (text: string) => Uint8Array<ArrayBuffer>;
  fromBase64?: (text: string) => Uint8Array<ArrayBuffer>;
}
const native = Uint8Array.prototype as NativeCodecs;
const nativeDecoders = Uint8Array as NativeDecoders;

const HEX_DIGITS = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"));

/** Lower-case hex, two digits a byte, as `toHex` writes it. */
export function hexInJavaScript(bytes: Uint8Array): string {
  let text = "";
  for (const byte of bytes) text += HEX_DIGITS[byte];
  return text;
}

/** Throws SyntaxError, as `fromHex` does, for an odd length or a character that is not hex. */
export function fromHexInJavaScript(text: string): Uint8Array<ArrayBuffer> {
  if (text.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(text)) {
    throw new SyntaxError("Input is not a valid hex string");
  }
  const bytes = new Uint8Array(text.length / 2);
  for (let i = 0; i < bytes.length; i++) {
    bytes[i] = parseInt(text.slice(2 * i, 2 * i + 2), 16);
  }
  return bytes;
}

/** base64url without padding, in JavaScript. */
export function base64UrlInJavaScript(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** Standard base64 (padding optional) decoded in JavaScript; atob throws on anything else. */
export function fromBase64InJavaScript(text: string): Uint8Array<ArrayBuffer> {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

export const toHex: (bytes: Uint8Array) => string = native.toHex
  ? (bytes) => bytes.toHex()
  : hexInJavaScript;

export const fromHex: (text: string) => Uint8Array<ArrayBuffer> = nativeDecoders.fromHex
  ? (text) => Uint8Array.fromHex(text)
  : fromHexInJavaScript;

/** URL-safe text: base64url without padding. */
export const toBase64Url: (bytes: Uint8Array) => string = native.toBase64
  ? (bytes) => bytes.toBase64({ alphabet: "base64url", omitPadding: true })
  : base64UrlInJavaScript;

export const fromBase64: (text: string) => Uint8Array<ArrayBuffer> = nativeDecoders.fromBase64
  ? (text) => Uint8Array.fromBase64(text)
  : fromBase64InJavaScript;
