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

/** `text` must be JSON that JSON.parse accepted: only its structure is followed here. */
export function hasDuplicateKey(text: string): boolean {
  // One entry per open container: the keys seen so far for an object, null for an array.
  const open: (Set<string> | null)[] = [];
  let atKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const start = i;
      for (i++; text.charCodeAt(i) !== QUOTE; i++) if (text.charCodeAt(i) === BACKSLASH) i++;
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
