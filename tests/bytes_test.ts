/**
 * The JavaScript codecs functions/_shared/bytes.ts falls back to on a runtime without
 * Uint8Array's own: the same text and bytes as the engine's codecs (this Deno has them), and the
 * same refusals.
 */
import assert from "node:assert/strict";
import * as inJavaScript from "./support/javascript-codecs.ts";

const {
  fromBase64: fromBase64InJavaScript,
  fromHex: fromHexInJavaScript,
  toBase64Url: toBase64UrlInJavaScript,
  toHex: toHexInJavaScript,
} = inJavaScript;

Deno.test("the codecs under test are the JavaScript ones, and the engine's are back", () => {
  assert.equal(typeof Uint8Array.prototype.toHex, "function");
  assert.equal(typeof Uint8Array.fromBase64, "function");
  assert.doesNotMatch(String(toHexInJavaScript), /toHex\(\)/);
  assert.doesNotMatch(String(fromBase64InJavaScript), /Uint8Array\.fromBase64/);
});

const samples = [
  new Uint8Array(0),
  Uint8Array.from({ length: 256 }, (_, byte) => byte),
  ...Array.from({ length: 64 }, (_, length) => crypto.getRandomValues(new Uint8Array(length))),
];

Deno.test("hex in JavaScript writes and reads what Uint8Array's own hex does", () => {
  for (const bytes of samples) {
    const text = bytes.toHex();
    assert.equal(toHexInJavaScript(bytes), text);
    assert.deepEqual(fromHexInJavaScript(text), Uint8Array.fromHex(text));
    assert.deepEqual(fromHexInJavaScript(text.toUpperCase()), bytes);
  }
  for (const invalid of ["a", "0g", "12 3", "zz", "0x12", "é0", "0\u0130"]) {
    assert.throws(() => Uint8Array.fromHex(invalid), SyntaxError, invalid);
    assert.throws(() => fromHexInJavaScript(invalid), SyntaxError, invalid);
  }
});

Deno.test("base64 in JavaScript writes and reads what Uint8Array's own base64 does", () => {
  for (const bytes of samples) {
    assert.equal(
      toBase64UrlInJavaScript(bytes),
      bytes.toBase64({ alphabet: "base64url", omitPadding: true }),
    );
    const standard = bytes.toBase64();
    assert.deepEqual(fromBase64InJavaScript(standard), Uint8Array.fromBase64(standard));
    const unpadded = standard.replace(/=+$/, "");
    assert.deepEqual(fromBase64InJavaScript(unpadded), Uint8Array.fromBase64(unpadded));
  }
  for (const invalid of ["a", "ab$=", "!!!!", "QQ==QQ=="]) {
    assert.throws(() => Uint8Array.fromBase64(invalid), SyntaxError, invalid);
    assert.throws(() => fromBase64InJavaScript(invalid), SyntaxError, invalid);
  }
});
