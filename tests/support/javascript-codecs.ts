/**
 * functions/_shared/bytes.ts as a runtime without Uint8Array's own hex and base64 codecs loads it
 * (Deno 2.1, say): a second copy of the module, imported while those codecs are removed, so its
 * exports are the JavaScript ones. The codecs are put back before this module finishes loading.
 */
type Codecs = typeof import("../../functions/_shared/bytes.ts");

const prototype = Uint8Array.prototype as unknown as Record<string, unknown>;
const constructor = Uint8Array as unknown as Record<string, unknown>;
const removed = [
  [prototype, "toHex"],
  [prototype, "toBase64"],
  [constructor, "fromHex"],
  [constructor, "fromBase64"],
] as const;
const saved = removed.map(([owner, name]) => Object.getOwnPropertyDescriptor(owner, name));

let codecs: Codecs;
try {
  for (const [owner, name] of removed) delete owner[name];
  // Another specifier, so another instance of the module, which picks its codecs as it loads.
  codecs = await import("../../functions/_shared/bytes.ts?without-native-codecs");
} finally {
  removed.forEach(([owner, name], i) => {
    if (saved[i] !== undefined) Object.defineProperty(owner, name, saved[i]!);
  });
}

export const { toHex, fromHex, toBase64Url, fromBase64 } = codecs;
