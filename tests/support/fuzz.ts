/**
 * Seeded randomness for fuzz tests: a small fast PRNG (sfc32) and generators of hostile values —
 * awkward unicode, control characters, SQL and template fragments, odd numbers, deep nesting and
 * malformed JSON text. The same seed gives the same sequence, so a failure replays exactly.
 */

export function seedFromEnv(name = "FUZZ_SEED"): number {
  const given = Deno.env.get(name);
  if (given !== undefined && given.trim() !== "") {
    const seed = Number(given);
    if (!Number.isSafeInteger(seed) || seed < 0) throw new Error(`${name} must be an integer >= 0`);
    return seed >>> 0;
  }
  return crypto.getRandomValues(new Uint32Array(1))[0];
}

export class Rng {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  constructor(readonly seed: number) {
    this.#a = 0x9e3779b9;
    this.#b = 0x243f6a88;
    this.#c = 0xb7e15162;
    this.#d = seed >>> 0;
    for (let i = 0; i < 15; i++) this.next();
  }

  /** A uniform 32-bit integer (sfc32). */
  next(): number {
    const t = (((this.#a + this.#b) >>> 0) + this.#d) >>> 0;
    this.#d = (this.#d + 1) >>> 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) >>> 0;
    this.#c = ((this.#c << 21) | (this.#c >>> 11)) >>> 0;
    this.#c = (this.#c + t) >>> 0;
    return t;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor((this.next() / 0x1_0000_0000) * n);
  }

  /** An integer in [min, max]. */
  between(min: number, max: number): number {
    return min + this.int(max - min + 1);
  }

  chance(p: number): boolean {
    return this.next() / 0x1_0000_0000 < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)];
  }

  /** Picks by weight: `[[weight, value], ...]`. */
  weighted<T>(items: readonly (readonly [number, T])[]): T {
    const total = items.reduce((sum, [w]) => sum + w, 0);
    let roll = this.int(total);
    for (const [weight, value] of items) {
      if (roll < weight) return value;
      roll -= weight;
    }
    return items[items.length - 1][1];
  }

  bytes(n: number): Uint8Array<ArrayBuffer> {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = this.next() & 0xff;
    return out;
  }

  hex(n: number): string {
    let s = "";
    for (let i = 0; i < n; i++) s += "0123456789abcdef"[this.int(16)];
    return s;
  }
}

export const SQL_FRAGMENTS = [
  "' OR '1'='1",
  "'; drop table public.user_secrets; --",
  '"; select pg_sleep(10); --',
  "1) union select ciphertext, iv from public.user_secrets --",
  "$1",
  "$$ language sql $$",
  "\\x00",
  "E'\\\\'",
  "current_setting('request.jwt.claims')",
  "set role service_role",
  "%s%s%n",
  "${jndi:ldap://x}",
  "{{7*7}}",
  "<script>alert(1)</script>",
  "../../../../etc/passwd",
  "\u0000",
  "null",
  "undefined",
  "__proto__",
  "constructor",
  "NaN",
];

const AWKWARD = [
  "\u0000",
  "\u0001",
  "\u0007",
  "\b",
  "\t",
  "\n",
  "\r",
  "\u000b",
  "\u001b[31m",
  "\u007f",
  "\u0085",
  "\u00a0",
  "\u200b",
  "\u200e",
  "\u202e",
  "\u2028",
  "\u2029",
  "\ufeff",
  "\ufffd",
  "\uffff",
  "\ud800", // a lone surrogate
  "\udfff",
  "\ud83d\ude00",
  "e\u0301",
  "ｆｕｌｌ",
  "Ω≈ç√",
  "𝕳𝖊𝖑𝖑𝖔",
  "اختبار",
  "テスト",
  "\u0130",
  "%00",
  "%0d%0a",
  "\\u0000",
];

/** A string made of printable ASCII, awkward unicode, control characters and SQL fragments. */
export function hostileString(rng: Rng, maxLength = 64): string {
  const parts: string[] = [];
  const pieces = rng.between(1, 6);
  for (let i = 0; i < pieces; i++) {
    parts.push(
      rng.weighted<() => string>([
        [4, () => {
          let s = "";
          for (let j = rng.between(0, 12); j > 0; j--) {
            s += String.fromCharCode(rng.between(32, 126));
          }
          return s;
        }],
        [3, () => rng.pick(AWKWARD)],
        [2, () => rng.pick(SQL_FRAGMENTS)],
        [1, () => String.fromCharCode(rng.int(0x10000))],
        [1, () => String.fromCodePoint(rng.between(0x10000, 0x10ffff))],
      ])(),
    );
  }
  const s = parts.join("");
  return s.length > maxLength ? s.slice(0, maxLength) : s;
}

/** Numbers that trip validators: non-integers, huge, negative zero, beyond safe integers. */
export function awkwardNumber(rng: Rng): number {
  return rng.pick([
    0,
    -0,
    -1,
    0.5,
    1e-7,
    1e21,
    1.7976931348623157e308,
    Number.MAX_SAFE_INTEGER + 2,
    -Number.MAX_SAFE_INTEGER - 2,
    2 ** 31,
    2 ** 63,
    rng.int(1000) - 500,
    rng.next() / 7,
  ]);
}

/** Any JSON value, bounded in depth and width. */
export function jsonValue(rng: Rng, depth = 3): unknown {
  const leaf = depth <= 0;
  return rng.weighted<() => unknown>([
    [2, () => null],
    [2, () => rng.chance(0.5)],
    [3, () => awkwardNumber(rng)],
    [5, () => hostileString(rng)],
    [leaf ? 0 : 2, () => Array.from({ length: rng.int(4) }, () => jsonValue(rng, depth - 1))],
    [leaf ? 0 : 2, () => {
      // No prototype, so a "__proto__" key is an own property, as JSON.parse would make it.
      const object: Record<string, unknown> = Object.create(null);
      for (let i = rng.int(4); i > 0; i--) {
        object[rng.chance(0.3) ? rng.pick(SQL_FRAGMENTS) : hostileString(rng, 16)] = jsonValue(
          rng,
          depth - 1,
        );
      }
      return object;
    }],
  ])();
}

/** A value of a type other than string. */
export function notAString(rng: Rng): unknown {
  const value = rng.pick<() => unknown>([
    () => null,
    () => true,
    () => awkwardNumber(rng),
    () => [hostileString(rng)],
    () => ({ value: hostileString(rng) }),
    () => jsonValue(rng, 2),
  ])();
  return typeof value === "string" ? [value] : value;
}

/** Nesting `depth` levels deep, as JSON text (arrays or objects). */
export function deeplyNested(rng: Rng, depth: number): string {
  return rng.chance(0.5)
    ? "[".repeat(depth) + "1" + "]".repeat(depth)
    : '{"a":'.repeat(depth) + "1" + "}".repeat(depth);
}

/** JSON text that must not parse: truncated, with stray syntax, or not UTF-8. */
export function malformedJson(rng: Rng, valid: string): Uint8Array<ArrayBuffer> | string {
  return rng.pick<() => Uint8Array<ArrayBuffer> | string>([
    () => valid.slice(0, Math.max(1, rng.int(valid.length))) || "{",
    () => valid.replace(/"/, "'"),
    () => `${valid},`,
    () => `${valid}}`,
    () => `{${valid}`,
    () => valid.replace(/:/, "::"),
    () => "{'secretType': 'x'}",
    () => '{"a": NaN}',
    () => '{"a": undefined}',
    () => "{/* comment */}",
    () => '{"a": 1,}',
    () => "\u0000",
    () => "nul",
    () => "[1, 2",
    () => '"unterminated',
    () => "\ufeff{}x",
    () => new Uint8Array([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d]), // {"\xc3(":1}
    () => new Uint8Array([0xff, 0xfe, 0x7b, 0x00, 0x7d, 0x00]), // UTF-16 with a BOM
    () => new Uint8Array([0x22, 0xed, 0xa0, 0x80, 0x22]), // an encoded surrogate
    () => rng.bytes(rng.between(1, 64)),
  ])();
}

/** base64url without padding. */
export function base64url(bytes: Uint8Array | string): string {
  const raw = typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes;
  let binary = "";
  for (const byte of raw) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}
