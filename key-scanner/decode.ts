/**
 * Base64 and hex inside a line of text (a Kubernetes secret's data, a Basic credential, a dumped
 * buffer, an environment file pasted as base64, PowerShell's `-EncodedCommand`): each run that
 * decodes to text, UTF-8 or UTF-16LE, with where in the run each decoded character came from, so a
 * key found inside is reported at its place in the line.
 */

/** A run of base64 or hex in a line that decodes to text. */
export interface EncodedRun {
  /** "base64", "hex", or either of UTF-16LE text ("UTF-16LE base64"). */
  readonly encoding: string;
  /** Where the run starts and ends in the line. */
  readonly start: number;
  readonly end: number;
  /** What it decodes to. */
  readonly text: string;
  /** The stretch of the line that holds the decoded characters [from, to). */
  span(from: number, to: number): [number, number];
}

/** A run too long to decode (MAX_RUN), which the caller must name as not read. */
export interface LongRun {
  readonly encoding: "base64" | "hex";
  readonly start: number;
  readonly length: number;
}

/**
 * Shortest runs decoded: base64 of 21 bytes (the shortest key a rule reads is about that long),
 * hex of 20 bytes. Longest: a run longer than a line segment's overlap (line-scanner.ts)
 * could be cut between segments; such a run is an embedded binary or a bundle, not a key or a
 * settings file.
 */
const MIN_BASE64 = 28;
const MIN_HEX = 40;
export const MAX_RUN = 8192;

// Standard and URL-safe alphabets, padding included; each run whole (a search starting inside a
// run fails at once, which keeps short runs linear). Hex is searched apart: hex after `0x` is part
// of a longer run of base64's alphabet.
const BASE64_RUN = new RegExp(`(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{${MIN_BASE64},}={0,2}`, "g");
const HEX_RUN = new RegExp(`(?<![0-9A-Fa-f])[0-9A-Fa-f]{${MIN_HEX},}`, "g");

const utf8 = new TextDecoder();
const utf16le = new TextDecoder("utf-16le");

/**
 * The runs in `line` that decode to text, in order of where they start; `tooLong` is told of each
 * run longer than MAX_RUN, which is not decoded.
 */
export function* encodedRuns(
  line: string,
  tooLong?: (run: LongRun) => void,
): Generator<EncodedRun> {
  if (line.length < MIN_BASE64) return;
  for (const match of line.matchAll(BASE64_RUN)) {
    const run = match[0];
    if (/^[0-9A-Fa-f]+$/.test(run)) continue;
    const start = match.index;
    if (run.length > MAX_RUN) {
      tooLong?.({ encoding: "base64", start, length: run.length });
      continue;
    }
    const decoded = asText(base64Bytes(run));
    if (decoded === null) continue;
    const { text, bytesBefore, wide } = decoded;
    yield {
      encoding: wide ? "UTF-16LE base64" : "base64",
      start,
      end: start + run.length,
      text,
      span: (from, to) => [
        start + Math.floor(bytesBefore(from) / 3) * 4,
        Math.min(start + run.length, start + Math.ceil(bytesBefore(to) / 3) * 4),
      ],
    };
  }
  for (const match of line.matchAll(HEX_RUN)) {
    const run = match[0];
    if (run.length > MAX_RUN) {
      tooLong?.({ encoding: "hex", start: match.index, length: run.length });
      continue;
    }
    // An odd run has a stray digit at one end: try the pairs from either.
    for (const skip of run.length % 2 === 0 ? [0] : [0, 1]) {
      const even = run.slice(skip, skip + ((run.length - skip) & ~1));
      const decoded = asText(hexBytes(even));
      if (decoded === null) continue;
      const { text, bytesBefore, wide } = decoded;
      const start = match.index + skip;
      yield {
        encoding: wide ? "UTF-16LE hex" : "hex",
        start,
        end: start + even.length,
        text,
        span: (from, to) => [start + bytesBefore(from) * 2, start + bytesBefore(to) * 2],
      };
      break;
    }
  }
}

const BASE64_VALUE = new Int8Array(128).fill(-1);
[..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"].forEach((c, i) => {
  BASE64_VALUE[c.charCodeAt(0)] = i;
});
BASE64_VALUE["-".charCodeAt(0)] = 62;
BASE64_VALUE["_".charCodeAt(0)] = 63;

/**
 * The run's bytes, or null as soon as one is a control character: what decodes to binary is given
 * up after a few bytes, not decoded whole. A NUL at an odd offset is let through: UTF-16LE text
 * (PowerShell's `-EncodedCommand`) has one after each ASCII character.
 */
function base64Bytes(run: string): Uint8Array | null {
  const chars = run.replace(/=+$/, "");
  const bytes = new Uint8Array(Math.floor((chars.length * 3) / 4));
  let bits = 0;
  let count = 0;
  let out = 0;
  for (let i = 0; i < chars.length && out < bytes.length; i++) {
    bits = (bits << 6) | BASE64_VALUE[chars.charCodeAt(i)];
    count += 6;
    if (count >= 8) {
      count -= 8;
      const byte = (bits >> count) & 0xff;
      if (isControl(byte) && !(byte === 0 && out % 2 === 1)) return null;
      bytes[out++] = byte;
    }
  }
  return bytes;
}

function hexBytes(run: string): Uint8Array | null {
  const bytes = new Uint8Array(run.length / 2);
  for (let i = 0; i < bytes.length; i++) {
    const byte = parseInt(run.slice(i * 2, i * 2 + 2), 16);
    if (isControl(byte) && !(byte === 0 && i % 2 === 1)) return null;
    bytes[i] = byte;
  }
  return bytes;
}

/** C0 controls but tab and line breaks, and DEL. */
const isControl = (byte: number) =>
  (byte < 0x20 && byte !== 9 && byte !== 10 && byte !== 13) || byte === 0x7f;

/** Whether the bytes are well-formed UTF-8 (no overlong forms, surrogates or values past U+10FFFF). */
function isUtf8(bytes: Uint8Array): boolean {
  for (let i = 0; i < bytes.length;) {
    const lead = bytes[i];
    if (lead < 0x80) {
      i++;
      continue;
    }
    const length = lead >= 0xc2 && lead <= 0xdf
      ? 2
      : lead >= 0xe0 && lead <= 0xef
      ? 3
      : lead >= 0xf0 && lead <= 0xf4
      ? 4
      : 0;
    if (length === 0 || i + length > bytes.length) return false;
    const second = bytes[i + 1];
    const low = lead === 0xe0 ? 0xa0 : lead === 0xf0 ? 0x90 : 0x80;
    const high = lead === 0xed ? 0x9f : lead === 0xf4 ? 0x8f : 0xbf;
    if (second < low || second > high) return false;
    for (let k = 2; k < length; k++) if ((bytes[i + k] & 0xc0) !== 0x80) return false;
    i += length;
  }
  return true;
}

/** Decoded text, and how many bytes its first characters took. */
interface DecodedText {
  readonly text: string;
  bytesBefore(chars: number): number;
  /** UTF-16LE rather than UTF-8. */
  readonly wide: boolean;
}

/**
 * The bytes as text: valid UTF-8 whose characters are printable or white space, or (with NULs)
 * UTF-16LE of such characters. Random bytes (a hash, a module, bytecode) almost never are, over 20
 * bytes or more.
 */
function asText(bytes: Uint8Array | null): DecodedText | null {
  if (bytes === null) return null;
  if (bytes.includes(0)) return asUtf16le(bytes);
  if (!isUtf8(bytes)) return null;
  const text = utf8.decode(bytes);
  if (hasC1Control(text)) return null;
  return { text, bytesBefore: (chars) => utf8Length(text, chars), wide: false };
}

/** UTF-16LE text, a last odd byte dropped: printable characters, no lone surrogate. */
function asUtf16le(bytes: Uint8Array): DecodedText | null {
  const text = utf16le.decode(bytes.subarray(0, bytes.length & ~1));
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if ((code < 0x20 && code !== 9 && code !== 10 && code !== 13) || code === 0x7f) return null;
    if (code === 0xfffd) return null;
  }
  if (hasC1Control(text) || !text.isWellFormed()) return null;
  return { text, bytesBefore: (chars) => chars * 2, wide: true };
}

function hasC1Control(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0x80 && code < 0xa0) return true;
  }
  return false;
}

/** The UTF-8 length of `text`'s first `chars` characters. */
function utf8Length(text: string, chars: number): number {
  let bytes = 0;
  for (let i = 0; i < chars; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < chars) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}
