/**
 * Whether a JSON text names a key twice in one object. JSON.parse keeps the last of them silently,
 * so `{"secretType":"a",…,"secretType":"b"}` would act on b while anything that read the first
 * (a log, a proxy, a person) saw a; a body like that is refused instead.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;

/**
 * Where the string opened at `open` ends, or -1 if it does not: found with indexOf, a quote being
 * escaped when an odd number of backslashes precede it (a 32 KB hex signature is one jump, not
 * 32,000 steps).
 */
function closingQuote(text: string, open: number): number {
  for (let at = text.indexOf('"', open + 1); at >= 0; at = text.indexOf('"', at + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
  return -1;
}

/** `text` must be JSON that JSON.parse accepted: only its structure is followed here. */
export function hasDuplicateKey(text: string): boolean {
  // One entry per open container: the keys seen so far for an object, null for an array.
  const open: (Set<string> | null)[] = [];
  let atKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const start = i;
      i = closingQuote(text, i);
      if (i < 0) return false; // not JSON: JSON.parse has the say
      const keys = open[open.length - 1];
      if (atKey && keys) {
        const raw = text.slice(start, i + 1);
        // Escapes decoded, so "a" and "\u0061" are the same key, as they are to JSON.parse.
        const key = raw.includes("\\") ? JSON.parse(raw) as string : raw.slice(1, -1);
        if (keys.has(key)) return true;
        keys.add(key);
        atKey = false;
      }
    } else if (c === OPEN_OBJECT) {
      open.push(new Set());
      atKey = true;
    } else if (c === OPEN_ARRAY) {
      open.push(null);
      atKey = false;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      open.pop();
      atKey = false;
    } else if (c === COMMA) {
      atKey = (open[open.length - 1] ?? null) !== null;
    }
  }
  return false;
}
