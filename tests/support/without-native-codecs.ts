/**
 * Preloaded into each function process (tests/support/edge.ts, `preload`) to stand for a runtime
 * older than V8 14, as Supabase's Edge Runtime has been: Uint8Array without its hex and base64
 * codecs.
 */
const prototype = Uint8Array.prototype as unknown as Record<string, unknown>;
const constructor = Uint8Array as unknown as Record<string, unknown>;
for (const name of ["toHex", "toBase64", "setFromHex", "setFromBase64"]) delete prototype[name];
for (const name of ["fromHex", "fromBase64"]) delete constructor[name];
