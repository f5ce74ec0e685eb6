/**
 * The array types the statements bind and read (text[] and uuid[]), declared to postgres.js, which
 * otherwise learns every array type from the catalog with a query on each new connection: one more
 * statement that every cold start waits for. One-dimensional arrays, as the statements use.
 */

/** A Postgres array literal with every element quoted, so that commas, braces and spaces are safe. */
function toArrayLiteral(values: readonly (string | null)[]): string {
  const element = (value: string | null) =>
    value === null ? "NULL" : `"${value.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
  return `{${values.map(element).join(",")}}`;
}

/** A one-dimensional array as Postgres writes it: an element is quoted when it needs to be. */
function fromArrayLiteral(text: string): (string | null)[] {
  if (!text.startsWith("{") || !text.endsWith("}")) {
    throw new TypeError("not a one-dimensional array literal");
  }
  const body = text.slice(1, -1);
  const values: (string | null)[] = [];
  let i = 0;
  while (i < body.length) {
    if (body[i] === '"') {
      let value = "";
      for (i++; body[i] !== '"'; i++) {
        if (body[i] === "\\") i++;
        if (i >= body.length) throw new TypeError("unterminated quoted array element");
        value += body[i];
      }
      values.push(value);
      i++; // past the closing quote
    } else {
      const end = body.indexOf(",", i) === -1 ? body.length : body.indexOf(",", i);
      const value = body.slice(i, end);
      if (value.includes('"') || value.includes("{") || value.includes("}")) {
        throw new TypeError("malformed array literal");
      }
      values.push(value === "NULL" ? null : value);
      i = end;
    }
    if (i < body.length && body[i++] !== ",") throw new TypeError("malformed array literal");
  }
  return values;
}

const arrayOf = (oid: number) => ({
  to: oid,
  from: [oid],
  serialize: toArrayLiteral,
  parse: fromArrayLiteral,
});

/** For postgres.js's `types` option, beside `fetch_types: false`. */
export const ARRAY_TYPES = { textArray: arrayOf(1009), uuidArray: arrayOf(2951) };
