/**
 * How bytes are written as text: UTF-8, UTF-16 (by byte-order mark, NULs in alternating bytes, or
 * its bytes' pattern) or 8-bit Latin-1, told from a file's first bytes; or binary, not to be read.
 */

type TextEncodingName = "utf-8" | "utf-16le" | "utf-16be" | "windows-1252";

/** How much of the start decides between text and binary. */
export const SNIFF_BYTES = 8192;

/**
 * How formats that are never text start: images, archives, compressed streams, executables,
 * WebAssembly, databases. Such a file is binary whatever its other bytes look like.
 */
const BINARY_SIGNATURES: ReadonlyArray<readonly number[]> = [
  [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], // PNG
  [0xff, 0xd8, 0xff], // JPEG
  [0x47, 0x49, 0x46, 0x38], // GIF8
  [0x00, 0x61, 0x73, 0x6d], // WebAssembly
  [0x7f, 0x45, 0x4c, 0x46], // ELF
  [0x50, 0x4b, 0x03, 0x04], // zip (and jar, docx, …)
  [0x1f, 0x8b], // gzip
  [0x28, 0xb5, 0x2f, 0xfd], // zstd
  [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00], // xz
  [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c], // 7z
  [0xca, 0xfe, 0xba, 0xbe], // Java class, Mach-O universal
  [0xcf, 0xfa, 0xed, 0xfe], // Mach-O
  [0x53, 0x51, 0x4c, 0x69, 0x74, 0x65, 0x20, 0x66], // "SQLite f"
  [0x52, 0x49, 0x46, 0x46], // RIFF (WAV, WebP, AVI)
  [0x4f, 0x67, 0x67, 0x53], // Ogg
  [0x1a, 0x45, 0xdf, 0xa3], // Matroska, WebM
];

function hasBinarySignature(head: Uint8Array): boolean {
  const mp4 = head[4] === 0x66 && head[5] === 0x74 && head[6] === 0x79 && head[7] === 0x70;
  return mp4 || BINARY_SIGNATURES.some((sig) => sig.every((byte, i) => head[i] === byte));
}

/**
 * The encoding of text that starts with `head`, or "binary". A byte-order mark decides, then a
 * binary format's signature. Otherwise, in order: NULs in every other byte mean UTF-16 (PowerShell's
 * `>` and Set-Content write UTF-16LE .env files), if the start decodes as text; text that decodes
 * as UTF-8 is UTF-8 (a stray NUL or two included); UTF-16 without NULs (CJK or kana text, whose
 * characters have no zero byte) shows in its bytes' pattern (utf16ByPattern); then 8-bit text
 * (Latin-1, Windows-1252: mostly ASCII, few control characters, a NUL allowed). A start without a
 * NUL that is none of these is read as UTF-8 all the same; with a NUL, it is binary.
 */
export function sniffEncoding(head: Uint8Array): TextEncodingName | "binary" {
  if (head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf) return "utf-8";
  if (head[0] === 0xff && head[1] === 0xfe) return "utf-16le";
  if (head[0] === 0xfe && head[1] === 0xff) return "utf-16be";
  if (hasBinarySignature(head)) return "binary";
  const hasNul = head.includes(0);
  if (hasNul) {
    const order = utf16ByNuls(head);
    if (order !== null && isMostlyText(decodeStrictly(evenPart(head), order))) return order;
  }
  if (isMostlyText(decodeStrictly(head, "utf-8"))) return "utf-8";
  // 8-bit text with its spaces and line breaks comes first: repeated lines of an even length
  // can make its bytes look patterned, and UTF-16 CJK or kana text has almost no such bytes.
  const latin1 = isLatin1Text(head);
  if (latin1 && whitespaceShare(head) >= 0.01) return "windows-1252";
  const order = utf16ByPattern(head);
  if (order !== null) return order;
  if (latin1) return "windows-1252";
  return hasNul ? "binary" : "utf-8";
}

/** The share of bytes that are ASCII spaces, tabs or line breaks. */
function whitespaceShare(head: Uint8Array): number {
  let count = 0;
  for (const byte of head) if (byte === 0x20 || byte === 9 || byte === 10 || byte === 13) count++;
  return count / Math.max(1, head.length);
}

const evenPart = (head: Uint8Array) => head.subarray(0, head.length & ~1);

/** ASCII in UTF-16LE is "k\0e\0y\0": NULs at odd offsets, almost none at even ones. */
function utf16ByNuls(head: Uint8Array): "utf-16le" | "utf-16be" | null {
  const pairs = head.length >> 1;
  let evenNuls = 0;
  let oddNuls = 0;
  for (let i = 0; i < pairs * 2; i += 2) {
    if (head[i] === 0) evenNuls++;
    if (head[i + 1] === 0) oddNuls++;
  }
  if (oddNuls >= pairs * 0.1 && evenNuls * 8 <= oddNuls) return "utf-16le";
  if (evenNuls >= pairs * 0.1 && oddNuls * 8 <= evenNuls) return "utf-16be";
  return null;
}

/**
 * UTF-16 told by its pattern rather than its NULs: in 8-bit text the bytes at even and at odd
 * offsets follow the same distribution, in UTF-16 they do not (the high byte of CJK text is one
 * of a few dozen values, its low byte any of 256). Far apart (a total variation distance of at
 * least one half; text in one byte per character stays under about 0.4 over 512 bytes or more),
 * the side with fewer distinct values is the high byte, and the start must then decode as text.
 */
function utf16ByPattern(head: Uint8Array): "utf-16le" | "utf-16be" | null {
  const pairs = head.length >> 1;
  if (pairs < 256) return null;
  const even = new Uint32Array(256);
  const odd = new Uint32Array(256);
  for (let i = 0; i < pairs * 2; i += 2) {
    even[head[i]]++;
    odd[head[i + 1]]++;
  }
  let distance = 0;
  let evenDistinct = 0;
  let oddDistinct = 0;
  for (let b = 0; b < 256; b++) {
    distance += Math.abs(even[b] - odd[b]);
    if (even[b] > 0) evenDistinct++;
    if (odd[b] > 0) oddDistinct++;
  }
  if (distance / 2 / pairs < 0.5) return null;
  const order = oddDistinct < evenDistinct ? "utf-16le" : "utf-16be";
  return isMostlyText(decodeStrictly(evenPart(head), order)) ? order : null;
}

/**
 * 8-bit text: at least 70 % printable ASCII or white space, and at most one character in a
 * hundred a control character (NUL included) or a byte Windows-1252 leaves undefined. Random or
 * compressed bytes are about 40 % printable ASCII.
 */
function isLatin1Text(head: Uint8Array): boolean {
  let ascii = 0;
  let controls = 0;
  for (const byte of head) {
    if ((byte >= 0x20 && byte < 0x7f) || byte === 9 || byte === 10 || byte === 12 || byte === 13) {
      ascii++;
    } else if (
      byte < 0x20 && byte !== 27 || byte === 0x7f || byte === 0x81 || byte === 0x8d ||
      byte === 0x8f || byte === 0x90 || byte === 0x9d
    ) {
      controls++;
    }
  }
  return ascii >= head.length * 0.7 && controls <= Math.max(1, head.length * 0.01);
}

function decodeStrictly(bytes: Uint8Array, encoding: TextEncodingName): string | null {
  try {
    // stream: the sample may end inside a character.
    return new TextDecoder(encoding, { fatal: true }).decode(bytes, { stream: true });
  } catch {
    return null;
  }
}

/** At most one character in ten is a control character (tab, newlines, form feed, ESC aside). */
function isMostlyText(text: string | null): boolean {
  if (text === null) return false;
  let controls = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if ((code < 0x20 && !(code >= 9 && code <= 13) && code !== 27) || code === 0x7f) controls++;
  }
  return controls * 10 <= text.length;
}
