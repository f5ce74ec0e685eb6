/**
 * Production refuses secrets and keys that someone else can know or guess (issue 30, item 4):
 * published defaults and placeholders, short or low-variety secrets, patterns and sequences,
 * near-copies of each other, and the local server's development marks however they are written.
 * Each refusal names the setting and never its value; random values of every documented format
 * pass.
 */
import assert from "node:assert/strict";
import { parseConfig } from "../functions/_shared/config/config.ts";
import { toHex } from "../functions/_shared/bytes.ts";
import { randomBase64Url } from "../functions/_shared/auth/random.ts";
import {
  base64,
  productionEnv,
  productionProblems,
  randomBase64,
  randomBytes,
} from "./support/config-env.ts";

const PUBLISHED = "is a published default or a placeholder (Supabase's example secrets, " +
  "changeme…); generate one for production";
const NOT_RANDOM = "is not random:";
const FEWER =
  `${NOT_RANDOM} fewer than 16 distinct characters (generate it: openssl rand -base64 32)`;
const REPEATED_TEXT = `${NOT_RANDOM} a repeated pattern (the same 8 characters twice)`;
const SEQUENCE_TEXT = `${NOT_RANDOM} 16 characters in sequence (abcd…, 0123…)`;
const SEQUENCE_BYTES = `${NOT_RANDOM} bytes in sequence (0, 1, 2, … or descending)`;
const REPEATED_BYTES = `${NOT_RANDOM} a repeated block (the same 8 bytes twice)`;
const PRINTABLE = `${NOT_RANDOM} every byte is printable text (a password in base64?)`;
const SHARE = "share a run of 16 characters (or 12 bytes): one is a near-copy of the other; " +
  "generate each on its own";
const DEV = "is a development secret made by the local server; generate one for production";
const WHITESPACE = "begins or ends with whitespace (a paste?); remove it";

/** `count` different byte values in random order (never a run stepping evenly by chance). */
function distinctBytes(count: number): Uint8Array {
  const all = Array.from({ length: 256 }, (_, i) => i);
  for (let i = all.length - 1; i > 0; i--) {
    const j = randomBytes(1)[0] % (i + 1);
    [all[i], all[j]] = [all[j], all[i]];
  }
  return Uint8Array.from(all.slice(0, count));
}

/** `length` characters drawn at random from `alphabet`. */
function randomText(alphabet: string, length: number): string {
  return Array.from(randomBytes(length), (byte) => alphabet[byte % alphabet.length]).join("");
}

const twice = (bytes: Uint8Array) => Uint8Array.from([...bytes, ...bytes]);

Deno.test("production refuses Supabase's published default secrets and changeme placeholders by name", () => {
  const cases: [string, string][] = [
    ["JWT_SECRET", "super-secret-jwt-token-with-at-least-32-characters-long"],
    ["JWT_SECRET", "your-super-secret-jwt-token-with-at-least-32-characters-long"],
    ["JWT_SECRET", "Super_Secret_JWT_Token_With_At_Least_32_Characters_Long!"],
    ["SERVER_REVEAL_TOKEN", "super-secret-jwt-token-with-at-least-32-characters-long"],
    ["JWT_SECRET", "your-super-secret-and-long-postgres-password"],
    ["JWT_SECRET", "UpNVntn3cDxHJpq99YMc1T1AQgQpc8kfYTuRgBiYa15BLrx8etQoXz3gZv1/u2oq"],
    ["SERVER_REVEAL_TOKEN", "changemechangemechangemechangeme"],
    ["SERVER_REVEAL_TOKEN", `CHANGE_ME-${randomBase64Url(24)}`],
    ["JWT_SECRET", `${randomBase64Url(16)}-replace-me-${randomBase64Url(16)}`],
  ];
  for (const [name, value] of cases) {
    assert.deepEqual(productionProblems({ [name]: value }), [`${name} ${PUBLISHED}`], value);
  }
});

Deno.test("production refuses secrets that are short, of few characters, a pattern or a sequence", () => {
  const block = "Qx7#mP2$wL9&kR4!zT"; // 18 different characters
  const cases: [string, string, string][] = [
    ["JWT_SECRET", randomBase64(24).slice(0, 31), "must be at least 32 characters"],
    ["SERVER_REVEAL_TOKEN", randomText("abcdefghijklmno", 40), FEWER],
    ["JWT_SECRET", randomText("0123456789abcd", 48), FEWER],
    ["JWT_SECRET", block + block, REPEATED_TEXT],
    [
      "SERVER_REVEAL_TOKEN",
      `${randomBase64Url(12)}password${randomBase64Url(12)}password`,
      REPEATED_TEXT,
    ],
    ["JWT_SECRET", "abcdefghijklmnopqrstuvwxyz0123456789", SEQUENCE_TEXT],
    ["JWT_SECRET", "ZYXWVUTSRQPONMLKJIHGFEDCBA9876543210", SEQUENCE_TEXT],
    // Random-looking text that encodes counting bytes, or a block twice, or a password.
    ["JWT_SECRET", base64(Uint8Array.from({ length: 48 }, (_, i) => i)), SEQUENCE_BYTES],
    ["JWT_SECRET", toHex(twice(distinctBytes(16))), REPEATED_BYTES],
    [
      "SERVER_REVEAL_TOKEN",
      toHex(Uint8Array.from({ length: 32 }, (_, i) => 200 - 3 * i)),
      SEQUENCE_BYTES,
    ],
    ["SERVER_REVEAL_TOKEN", btoa("correct horse battery staple, 2024!"), PRINTABLE],
  ];
  for (const [name, value, problem] of cases) {
    const problems = productionProblems({ [name]: value });
    assert.equal(problems.length, 1, `${value}: ${problems.join("; ")}`);
    assert.ok(problems[0].startsWith(name) && problems[0].endsWith(problem), problems[0]);
  }
});

Deno.test("production refuses encryption keys in sequence or repeating a block, in any keyring entry", () => {
  assert.deepEqual(
    productionProblems({ ENCRYPTION_KEY: base64(Uint8Array.from({ length: 32 }, (_, i) => i)) }),
    [`ENCRYPTION_KEY ${SEQUENCE_BYTES}`],
  );
  const descending = Uint8Array.from({ length: 32 }, (_, i) => 255 - i);
  const stepping = Uint8Array.from({ length: 32 }, (_, i) => (7 + 9 * i) % 256);
  const block = twice(distinctBytes(16));
  assert.deepEqual(
    productionProblems({
      ENCRYPTION_KEY: "",
      ENCRYPTION_KEYS: `k4:${randomBase64(32)},k3:${base64(descending)},k2:${base64(stepping)},k1:${
        base64(block)
      }`,
    }),
    [
      `ENCRYPTION_KEYS entry 2 ${SEQUENCE_BYTES}`,
      `ENCRYPTION_KEYS entry 3 ${SEQUENCE_BYTES}`,
      `ENCRYPTION_KEYS entry 4 ${REPEATED_BYTES}`,
    ],
  );
});

Deno.test("production refuses secrets that share a run of 16 characters with each other or a key", () => {
  const secret = randomBase64(48);
  const key = randomBytes(32);
  const keyText = base64(key);
  // One character changed in the middle: a near-copy, in either role.
  const edited = `${secret.slice(0, 30)}${secret[30] === "A" ? "B" : "A"}${secret.slice(31)}`;
  assert.deepEqual(productionProblems({ SERVER_REVEAL_TOKEN: secret, JWT_SECRET: edited }), [
    `SERVER_REVEAL_TOKEN and JWT_SECRET ${SHARE}`,
  ]);
  // A prefix in common, in another case.
  assert.deepEqual(
    productionProblems({
      SERVER_REVEAL_TOKEN: `${secret.slice(0, 20)}${randomBase64Url(24)}`,
      JWT_SECRET: `${randomBase64Url(24)}${secret.slice(0, 20).toLowerCase()}`,
    }),
    [`SERVER_REVEAL_TOKEN and JWT_SECRET ${SHARE}`],
  );
  // The encryption key written another way (hex) is the key; part of its text is a copy.
  assert.deepEqual(
    productionProblems({
      ENCRYPTION_KEY: keyText,
      SERVER_REVEAL_TOKEN: `${keyText.slice(4, 24)}${randomBase64Url(16)}`,
      JWT_SECRET: toHex(key),
    }),
    [
      `SERVER_REVEAL_TOKEN and ENCRYPTION_KEY ${SHARE}`,
      "JWT_SECRET must differ from ENCRYPTION_KEY",
    ],
  );
  // Two keyring entries: one the other with its last bytes changed, one the same bytes again.
  const changed = Uint8Array.from(key);
  changed.set(randomBytes(4), 28);
  assert.deepEqual(
    productionProblems({
      ENCRYPTION_KEY: "",
      ENCRYPTION_KEYS: `k3:${base64(changed)},k2:${keyText},k1:${
        keyText.replaceAll("+", "-").replaceAll("/", "_")
      }`,
    }),
    [
      `ENCRYPTION_KEYS entry 1 and ENCRYPTION_KEYS entry 2 ${SHARE}`,
      `ENCRYPTION_KEYS entry 1 and ENCRYPTION_KEYS entry 3 ${SHARE}`,
      "ENCRYPTION_KEYS entry 2 must differ from ENCRYPTION_KEYS entry 3",
    ],
  );
});

/** The text's bytes as base64 (`base64url`: that alphabet, unpadded) or hex. */
const encodedText = (text: string, as: "base64" | "base64url" | "hex") => {
  const bytes = new TextEncoder().encode(text);
  if (as === "hex") return toHex(bytes);
  const plain = base64(bytes);
  return as === "base64"
    ? plain
    : plain.replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
};
const reversed = (text: string) => Array.from(text).reverse().join("");

Deno.test("production refuses a reveal token or JWT secret that is a public key, as written, re-encoded or reversed", () => {
  const anonKey = `eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.${randomBase64Url(60)}.${
    randomBase64Url(32)
  }`;
  const publishable = `sb_publishable_${toHex(randomBytes(24))}`;
  // Its first digit differs from publishable's: the shared prefix and one digit more would be a
  // run of 16, and the near-copy below would share it with this key too (one run in 16).
  const otherFirst = publishable[15] === "0" ? "1" : "0";
  const other = `sb_publishable_${otherFirst}${toHex(randomBytes(24)).slice(1)}`;
  const publicKeys = {
    SUPABASE_ANON_KEY: anonKey,
    SUPABASE_PUBLISHABLE_KEYS: JSON.stringify({ default: other, web: publishable }),
  };
  const anon = "SUPABASE_ANON_KEY (a public key)";
  const second = "SUPABASE_PUBLISHABLE_KEYS entry 2 (a public key)";
  const cases: [string, string, string][] = [
    ["SERVER_REVEAL_TOKEN", anonKey, anon],
    ["SERVER_REVEAL_TOKEN", publishable, second],
    ["SERVER_REVEAL_TOKEN", encodedText(anonKey, "base64url"), anon],
    ["SERVER_REVEAL_TOKEN", encodedText(publishable, "base64"), second],
    ["SERVER_REVEAL_TOKEN", encodedText(publishable, "hex"), second],
    ["SERVER_REVEAL_TOKEN", reversed(anonKey), anon],
    ["JWT_SECRET", publishable, second],
    ["JWT_SECRET", reversed(publishable), second],
  ];
  for (const [name, value, key] of cases) {
    const problems = productionProblems({ ...publicKeys, [name]: value });
    assert.ok(problems.includes(`${name} must differ from ${key}`), `${value}: ${problems}`);
  }
  // A near-copy: the publishable key with its last characters changed.
  const edited = `${publishable.slice(0, -6)}${toHex(randomBytes(3))}`;
  assert.deepEqual(productionProblems({ ...publicKeys, SERVER_REVEAL_TOKEN: edited }), [
    `SERVER_REVEAL_TOKEN and ${second} ${SHARE}`,
  ]);
  // One key given alone, not as JSON, is compared too.
  assert.deepEqual(
    productionProblems({
      SUPABASE_PUBLISHABLE_KEYS: publishable,
      SERVER_REVEAL_TOKEN: publishable,
    }),
    ["SERVER_REVEAL_TOKEN must differ from SUPABASE_PUBLISHABLE_KEYS entry 1 (a public key)"],
  );
});

Deno.test("production refuses a secret that is another secret or an encryption key reversed or re-encoded", () => {
  const jwtSecret = randomBase64(48);
  const key = randomBytes(32);
  const cases: [Record<string, string>, string][] = [
    [
      { JWT_SECRET: jwtSecret, SERVER_REVEAL_TOKEN: reversed(jwtSecret) },
      "SERVER_REVEAL_TOKEN must differ from JWT_SECRET",
    ],
    [
      { JWT_SECRET: jwtSecret, SERVER_REVEAL_TOKEN: encodedText(jwtSecret, "base64url") },
      "SERVER_REVEAL_TOKEN must differ from JWT_SECRET",
    ],
    [
      { JWT_SECRET: jwtSecret, SERVER_REVEAL_TOKEN: encodedText(jwtSecret, "hex") },
      "SERVER_REVEAL_TOKEN must differ from JWT_SECRET",
    ],
    [
      { ENCRYPTION_KEY: base64(key), JWT_SECRET: base64(key.slice().reverse()) },
      "JWT_SECRET must differ from ENCRYPTION_KEY",
    ],
    [
      { ENCRYPTION_KEY: base64(key), SERVER_REVEAL_TOKEN: toHex(key.slice().reverse()) },
      "SERVER_REVEAL_TOKEN must differ from ENCRYPTION_KEY",
    ],
    // Encoded twice: the key in hex, that text in base64.
    [
      { ENCRYPTION_KEY: base64(key), SERVER_REVEAL_TOKEN: encodedText(toHex(key), "base64") },
      "SERVER_REVEAL_TOKEN must differ from ENCRYPTION_KEY",
    ],
  ];
  for (const [env, problem] of cases) {
    const problems = productionProblems(env);
    assert.ok(problems.includes(problem), `${problem}: ${problems}`);
  }
});

Deno.test("production finds the development mark in any case and after whitespace", () => {
  for (const mark of ["Dev-", "DEV-", "dEv-"]) {
    for (const name of ["SERVER_REVEAL_TOKEN", "JWT_SECRET"]) {
      assert.deepEqual(productionProblems({ [name]: `${mark}${randomBase64Url(32)}` }), [
        `${name} ${DEV}`,
      ]);
    }
  }
  for (const padded of [` dev-${randomBase64Url(32)}`, `\tDev-${randomBase64Url(32)}\n`]) {
    assert.deepEqual(productionProblems({ JWT_SECRET: padded }), [
      `JWT_SECRET ${WHITESPACE}`,
      `JWT_SECRET ${DEV}`,
    ]);
    // A reveal token is a header value: refused in every mode for the whitespace alone.
    const problems = productionProblems({ SERVER_REVEAL_TOKEN: padded });
    assert.ok(problems.some((p) => p.startsWith("SERVER_REVEAL_TOKEN") && p.includes("header")));
  }
});

Deno.test("production refuses a JWT_SECRET with whitespace around it, naming it", () => {
  for (const padded of [`${randomBase64(48)}\n`, ` ${randomBase64(48)}`, `${randomBase64(48)} `]) {
    assert.deepEqual(productionProblems({ JWT_SECRET: padded }), [`JWT_SECRET ${WHITESPACE}`]);
  }
});

Deno.test("1,000 random secrets and keys of each documented format pass production's checks", () => {
  const hex = (bytes: number) => toHex(randomBytes(bytes));
  // openssl rand -base64 32 / 48, base64url (the local server's and many generators'), and
  // openssl rand -hex 32; a Supabase project's JWT secret is 40 characters of base64's alphabet.
  const revealTokens = [() => randomBase64(32), () => randomBase64Url(32), () => hex(32)];
  const jwtSecrets = [
    () => randomBase64(48),
    () => randomBase64(32),
    () => randomBase64Url(48),
    () => hex(32),
    () => randomText("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", 40),
  ];
  const keys = [() => randomBase64(32), () => randomBase64Url(32)];
  const refused: string[] = [];
  for (let i = 0; i < 1000; i++) {
    const env = productionEnv({
      ENCRYPTION_KEY: "",
      ENCRYPTION_KEYS: `k2:${keys[i % 2]()},k1:${keys[(i + 1) % 2]()}`,
      SERVER_REVEAL_TOKEN: revealTokens[i % revealTokens.length](),
      JWT_SECRET: jwtSecrets[i % jwtSecrets.length](),
      // Public keys as Supabase gives them: a legacy anon JWT, publishable keys.
      SUPABASE_ANON_KEY: `eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.${randomBase64Url(60)}.${
        randomBase64Url(32)
      }`,
      SUPABASE_PUBLISHABLE_KEYS: JSON.stringify({
        default: `sb_publishable_${hex(24)}`,
        web: `sb_publishable_${hex(24)}`,
      }),
    });
    try {
      parseConfig(env);
    } catch (error) {
      refused.push(String(error));
    }
  }
  assert.deepEqual(refused, []);
});
