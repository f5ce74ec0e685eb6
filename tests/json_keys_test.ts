/** hasDuplicateKey follows JSON's structure: keys per object, escapes decoded, strings skipped. */
import assert from "node:assert/strict";
import { hasDuplicateKey } from "../functions/_shared/http/json-keys.ts";

Deno.test("a key named twice in one object is found, at any depth and however it is escaped", () => {
  for (
    const text of [
      '{"a":1,"a":2}',
      '{ "a" : 1 , "b" : 2 , "a" : 3 }',
      '{"a":"x","\\u0061":"y"}',
      '{"a":{"b":1},"a":2}',
      '{"outer":{"b":1,"b":2}}',
      '[1,{"x":[{"k":1,"k":1}]}]',
      '{"":1,"":2}',
    ]
  ) {
    JSON.parse(text); // each is JSON.parse's to accept
    assert.equal(hasDuplicateKey(text), true, text);
  }
});

Deno.test("the same key in different objects, or a value that looks like a key, is no duplicate", () => {
  for (
    const text of [
      '{"a":1,"b":2}',
      '[{"a":1},{"a":1}]',
      '{"a":{"a":{"a":1}}}',
      '{"a":"a","b":"a"}',
      '{"a":"{\\"a\\":1,\\"a\\":2}"}',
      '{"a":["a","a"],"b":{"a":1}}',
      '{"a\\"":1,"a":2}',
      '"just a string"',
      "{}",
      "[]",
      "7",
    ]
  ) {
    JSON.parse(text);
    assert.equal(hasDuplicateKey(text), false, text);
  }
});

Deno.test("strings are skipped whole, however many backslashes end them, and a string left open ends the scan", () => {
  assert.equal(hasDuplicateKey('{"a\\\\":1,"a\\\\":2}'), true);
  assert.equal(hasDuplicateKey('{"a\\\\\\"":1,"a\\\\":2}'), false);
  assert.equal(hasDuplicateKey(`{"signature":"0x${"ab".repeat(16_000)}","signature":"0x"}`), true);
  assert.equal(hasDuplicateKey('{"a":"unterminated'), false);
});
