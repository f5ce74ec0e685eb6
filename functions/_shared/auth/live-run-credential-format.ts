/**
 * The live-run credential's text: `wvlr_`, 36 random base62 characters, then 6 base62 characters
 * of the CRC-32 of those 36. The prefix lets any scanner find one; the checksum lets it tell a
 * real credential from a look-alike without asking the service (as GitHub's and Stripe's do).
 */

export const LIVE_RUN_CREDENTIAL_PREFIX = "wvlr_";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const RANDOM_LENGTH = 36;
const CHECKSUM_LENGTH = 6;

/** A credential where it is written: not glued to a word character on either side. */
export const LIVE_RUN_CREDENTIAL_PATTERN =
  /(?<![A-Za-z0-9_])wvlr_([0-9A-Za-z]{36})([0-9A-Za-z]{6})(?![A-Za-z0-9_])/g;

/** The whole text one credential, as `isLiveRunCredential` tests it. */
const WHOLE_CREDENTIAL = new RegExp(`^${LIVE_RUN_CREDENTIAL_PATTERN.source}$`);

const CRC32_TABLE = Uint32Array.from({ length: 256 }, (_, byte) => {
  let crc = byte;
  for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? 0xedb88320 ^ (crc >>> 1) : crc >>> 1;
  return crc;
});

function crc32(text: string): number {
  let crc = 0xffffffff;
  for (let i = 0; i < text.length; i++) {
    crc = CRC32_TABLE[(crc ^ text.charCodeAt(i)) & 0xff] ^ (crc >>> 8);
  }
  return (crc ^ 0xffffffff) >>> 0;
}

/** The checksum of a random part: its CRC-32 in base62, left-padded with zeros to 6. */
function checksumOf(randomPart: string): string {
  let value = crc32(randomPart);
  let digits = "";
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    digits = BASE62[value % 62] + digits;
    value = Math.floor(value / 62);
  }
  return digits;
}

/** A new credential: 36 characters from the system's CSPRNG (about 214 bits), then its checksum. */
export function generateLiveRunCredential(): string {
  // 248 is the largest multiple of 62 below 256: bytes at or above it are drawn again, so every
  // character is equally likely.
  let randomPart = "";
  while (randomPart.length < RANDOM_LENGTH) {
    for (const byte of crypto.getRandomValues(new Uint8Array(RANDOM_LENGTH))) {
      if (byte < 248 && randomPart.length < RANDOM_LENGTH) randomPart += BASE62[byte % 62];
    }
  }
  return LIVE_RUN_CREDENTIAL_PREFIX + randomPart + checksumOf(randomPart);
}

/** Whether `text` is exactly a well-formed credential: prefix, lengths, alphabet and checksum. */
export function isLiveRunCredential(text: string): boolean {
  if (text.length !== LIVE_RUN_CREDENTIAL_PREFIX.length + RANDOM_LENGTH + CHECKSUM_LENGTH) {
    return false;
  }
  const match = WHOLE_CREDENTIAL.exec(text);
  return match !== null && checksumOf(match[1]) === match[2];
}
