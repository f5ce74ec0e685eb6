/**
 * The array types declared to postgres.js (functions/_shared/db/array-types.ts) instead of the
 * driver's catalog lookup on each new connection: what they write is read back unchanged by a real
 * PostgreSQL, and what PostgreSQL writes is read as it meant.
 */
import assert from "node:assert/strict";
import { ARRAY_TYPES } from "../functions/_shared/db/array-types.ts";
import { openDatabase } from "../server/database.ts";

const { serialize: toArrayLiteral, parse: fromArrayLiteral } = ARRAY_TYPES.textArray;

const AWKWARD = [
  "provider_a_key",
  "",
  "two words",
  'a "quoted" one',
  "back\\slash",
  "comma,brace}{",
  "NULL",
  "null",
  "trailing\\",
  "ünïcödé ✓",
  " padded ",
];

Deno.test("array literals round-trip through the codec alone, and malformed ones are refused", () => {
  assert.deepEqual(fromArrayLiteral(toArrayLiteral(AWKWARD)), AWKWARD);
  assert.deepEqual(fromArrayLiteral(toArrayLiteral([])), []);
  assert.deepEqual(fromArrayLiteral(toArrayLiteral(["x", null])), ["x", null]);
  assert.deepEqual(fromArrayLiteral('{a,NULL,"NULL",""}'), ["a", null, "NULL", ""]);
  for (const malformed of ["", "a,b", "{a", '{"open}', "{a}b}", '{"a"b}']) {
    assert.throws(() => fromArrayLiteral(malformed), TypeError, malformed);
  }
});

const url = Deno.env.get("DATABASE_URL");
if (!url) {
  console.warn("array_types_test: DATABASE_URL is not set; the PostgreSQL round trip is skipped");
}

Deno.test({
  name: "text[] and uuid[] reach a real PostgreSQL and come back unchanged, nulls included",
  ignore: !url,
  async fn() {
    const db = await openDatabase({
      engine: "postgres",
      url: url!,
      maxConnections: 1,
      prepare: false,
      queryTimeoutMs: 5000,
    });
    try {
      const ids = [crypto.randomUUID(), crypto.randomUUID()];
      const [row] = await db.query<{ texts: string[]; ids: string[]; n: number; fifth: string }>(
        `select $1::text[] as texts, $2::uuid[] as ids, cardinality($1::text[]) as n,
                ($1::text[])[5] as fifth`,
        [[...AWKWARD, null], ids],
      );
      assert.deepEqual(row.texts, [...AWKWARD, null]);
      assert.deepEqual(row.ids, ids);
      assert.equal(row.n, AWKWARD.length + 1);
      assert.equal(row.fifth, "back\\slash", "the server saw each element as sent");
      const [written] = await db.query<{ texts: string[] }>(
        `select array['plain', 'two words', '', null, 'q"uote', 'b\\s', '{}']::text[] as texts`,
      );
      assert.deepEqual(written.texts, ["plain", "two words", "", null, 'q"uote', "b\\s", "{}"]);
    } finally {
      await db.close();
    }
  },
});
