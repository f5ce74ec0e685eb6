/**
 * Keys inside hex dumps, whose bytes run on over lines: xxd (default, `-g1`, `-u`, `-c 8`, `-p`),
 * `hexdump -C`, hex bytes separated by spaces, and byte lists in code (`0x4f, 0x50, …`, as
 * `xxd -i` writes them). Each key is found once, at the line and column of its first byte; dumps
 * of random bytes, of text without a key, and lists of small numbers are not findings. Keys and
 * dumps are made at run time (tests/support/key-scan.ts); no xxd binary is needed.
 */
import assert from "node:assert/strict";
import { maskSecret } from "../key-scanner/finding.ts";
import { OTHER_FAMILIES, scanText, TOKEN_FAMILIES } from "./support/key-scan.ts";

const family = (name: string) =>
  [...TOKEN_FAMILIES, ...OTHER_FAMILIES].find((f) => f.name === name)!;
const FAMILIES = [
  family("OpenAI project key"),
  family("Anthropic key"),
  family("Hugging Face user token"),
  family("Google API key"),
  family("GitHub token"),
];

/** A dump's text, and the 1-based line and column where each byte's digits start. */
interface Dump {
  readonly text: string;
  readonly at: ReadonlyArray<readonly [number, number]>;
}

const hex2 = (byte: number, upper = false) => {
  const digits = byte.toString(16).padStart(2, "0");
  return upper ? digits.toUpperCase() : digits;
};
const shown = (bytes: Uint8Array) =>
  Array.from(bytes, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : ".")).join("");

/** Lines of `perLine` bytes each, written by `line` (which returns a line and its columns). */
function dumpLines(
  bytes: Uint8Array,
  perLine: number,
  line: (chunk: Uint8Array, offset: number) => { text: string; columns: number[] },
  header: string[] = [],
  footer: string[] = [],
): Dump {
  const lines = [...header];
  const at: Array<[number, number]> = [];
  for (let offset = 0; offset < bytes.length; offset += perLine) {
    const { text, columns } = line(bytes.subarray(offset, offset + perLine), offset);
    lines.push(text);
    for (const column of columns) at.push([lines.length, column + 1]);
  }
  return { text: [...lines, ...footer].join("\n") + "\n", at };
}

/** xxd: an offset, groups of `group` bytes, then the bytes as text. */
function xxd(bytes: Uint8Array, options: { group?: number; perLine?: number; upper?: boolean }) {
  const { group = 2, perLine = 16, upper = false } = options;
  const width = perLine * 2 + Math.ceil(perLine / group) - 1;
  return dumpLines(bytes, perLine, (chunk, offset) => {
    let text = `${offset.toString(16).padStart(8, "0")}: `;
    const columns: number[] = [];
    chunk.forEach((byte, i) => {
      if (i > 0 && i % group === 0) text += " ";
      columns.push(text.length);
      text += hex2(byte, upper);
    });
    const start = 10;
    return { text: `${text.padEnd(start + width)}  ${shown(chunk)}`, columns };
  });
}

/** `xxd -p`: 30 bytes a line, hex alone. */
const xxdPlain = (bytes: Uint8Array) =>
  dumpLines(bytes, 30, (chunk) => ({
    text: Array.from(chunk, (b) => hex2(b)).join(""),
    columns: Array.from(chunk, (_, i) => i * 2),
  }));

/** `hexdump -C`: an offset, 16 bytes in two halves, then `|text|`; the end offset alone. */
function hexdumpC(bytes: Uint8Array): Dump {
  const dump = dumpLines(
    bytes,
    16,
    (chunk, offset) => {
      let text = `${offset.toString(16).padStart(8, "0")}  `;
      const columns: number[] = [];
      chunk.forEach((byte, i) => {
        if (i === 8) text += " ";
        columns.push(text.length);
        text += `${hex2(byte)} `;
      });
      return { text: `${text.padEnd(59)} |${shown(chunk)}|`, columns };
    },
    [],
    [bytes.length.toString(16).padStart(8, "0")],
  );
  return dump;
}

/** Hex bytes separated by spaces, 16 a line after a 4-digit offset (as Wireshark copies them). */
const spaced = (bytes: Uint8Array) =>
  dumpLines(bytes, 16, (chunk, offset) => ({
    text: `${offset.toString(16).padStart(4, "0")}   ${
      Array.from(chunk, (b) => hex2(b)).join(" ")
    }`,
    columns: Array.from(chunk, (_, i) => 7 + i * 3),
  }));

/** `xxd -i`: a C array, 12 bytes a line. */
const cArray = (bytes: Uint8Array) =>
  dumpLines(
    bytes,
    12,
    (chunk, offset) => ({
      text: "  " + Array.from(chunk, (b) => `0x${hex2(b)}`).join(", ") +
        (offset + chunk.length < bytes.length ? "," : ""),
      columns: Array.from(chunk, (_, i) => 2 + i * 6),
    }),
    ["unsigned char secrets_env[] = {"],
    ["};", `unsigned int secrets_env_len = ${bytes.length};`],
  );

/** A byte list on one line, as Rust or Python code holds one. */
const oneLineList = (bytes: Uint8Array) =>
  dumpLines(bytes, bytes.length, (chunk) => {
    const prefix = "const SECRET: [u8; N] = [";
    return {
      text: `${prefix}${Array.from(chunk, (b) => `0x${hex2(b)}`).join(",")}];`,
      columns: Array.from(chunk, (_, i) => prefix.length + i * 5),
    };
  });

const FORMATS: ReadonlyArray<[string, (bytes: Uint8Array) => Dump]> = [
  ["xxd", (b) => xxd(b, {})],
  ["xxd -g1", (b) => xxd(b, { group: 1 })],
  ["xxd -u -c 8", (b) => xxd(b, { upper: true, perLine: 8 })],
  ["xxd -p", xxdPlain],
  ["hexdump -C", hexdumpC],
  ["spaced hex", spaced],
  ["xxd -i", cArray],
  ["byte list on one line", oneLineList],
];

const encode = (text: string) => new TextEncoder().encode(text);

Deno.test("keys in xxd, hexdump -C, space-separated hex and 0x byte-list dumps are found across lines, at their first byte", () => {
  for (const { make, kind, variable } of FAMILIES) {
    for (let i = 0; i < 10; i++) {
      const key = make();
      // The key at every offset modulo a line, so it is cut at every place.
      const before = `# env, dumped\n${"#".repeat(i * 3)}\n${variable}=`;
      const bytes = encode(`${before}${key}\nDEBUG=false\n`);
      const offset = encode(before).length;
      for (const [format, write] of FORMATS) {
        const dump = write(bytes);
        const [line, column] = dump.at[offset];
        assert.deepEqual(
          scanText(`notes\n\n${dump.text}\ntrailing text\n`, "dump.txt").map((
            f,
          ) => [f.line, f.column, f.kind, f.masked]),
          [[line + 2, column, `${kind}, in a hex dump`, maskSecret(key)]],
          `${format}:\n${dump.text}`,
        );
      }
    }
  }
});

Deno.test("dumps of random bytes, of text without a key and byte lists of small numbers are not findings", () => {
  const texts = [
    crypto.getRandomValues(new Uint8Array(4096)),
    encode("A long paragraph dumped for debugging, with words and numbers 0123 but no key.\n"),
    encode("OPENAI_API_KEY=sk-...\nMISTRAL_API_KEY=<your key here>\n"),
    Uint8Array.from({ length: 256 }, (_, i) => i),
  ];
  for (const bytes of texts) {
    for (const [format, write] of FORMATS) {
      assert.deepEqual(scanText(write(bytes).text, "dump.txt"), [], format);
    }
  }
  const clean = [
    "const MAGIC = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];",
    "colors: ff 00 ff 00 80 80 80 80 c0 c0 c0 c0",
    "be ad de fa ca fe be ad de fa ca fe",
  ];
  for (const line of clean) assert.deepEqual(scanText(line, "a.ts"), [], line);
});

Deno.test("a key in a dump longer than what is held at once is found once, wherever the dump is cut", () => {
  const key = family("OpenAI project key").make();
  // Over 64 KiB of bytes, and keys near where the held bytes are read and cut.
  const filler = (length: number) => "x".repeat(length - 1) + "\n";
  for (const at of [100, 57_300, 57_344 - 20, 65_536 - 8_192 - 60, 65_536 - 30, 70_000]) {
    const before = `${filler(at)}OPENAI_API_KEY=`;
    const bytes = encode(`${before}${key}\n${filler(30_000)}`);
    const dump = xxdPlain(bytes);
    const [line, column] = dump.at[encode(before).length];
    assert.deepEqual(
      scanText(dump.text, "big.hex").map((f) => [f.line, f.column, f.kind]),
      [[line, column, `${family("OpenAI project key").kind}, in a hex dump`]],
      `key after ${at} bytes`,
    );
  }
});

Deno.test("a key wholly inside one line of a dump is reported once, not once per reading", () => {
  const key = family("AWS access key id").make();
  const bytes = encode(`id ${key} ok\n`);
  const line = Array.from(bytes, (b) => hex2(b)).join("");
  const findings = scanText(`${line}\n${line.slice(0, 40)}\n`, "dump.hex");
  assert.deepEqual(findings.map((f) => [f.line, f.column, f.masked]), [[1, 7, maskSecret(key)]]);
});

Deno.test("a dump's line marked scan-keys:allow is skipped with its bytes, as any marked line is", () => {
  const key = family("OpenAI project key").make();
  const list = (bytes: Uint8Array) => Array.from(bytes, (b) => `0x${hex2(b)}`).join(", ");
  const line = `  ${list(encode(`OPENAI_API_KEY=${key}`))},`;
  assert.equal(scanText(`unsigned char k[] = {\n${line}\n};\n`, "k.c").length, 1);
  const marked = `${line} // scan-keys:allow (a test vector)`;
  assert.deepEqual(scanText(`unsigned char k[] = {\n${marked}\n};\n`, "k.c"), []);
});
