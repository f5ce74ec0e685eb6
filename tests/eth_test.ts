/**
 * functions/_shared/auth/eth.ts and the message builder against viem, the library they replace in the
 * functions (tests still have it): EIP-55 checksums, EIP-191 personal-sign recovery and the
 * EIP-4361 layout must agree exactly, on seeded random keys, messages and fields. The
 * WebAssembly module (secp256k1.ts) is held equal to the references: its recovery (libsecp256k1) to
 * @noble/curves on real signatures and on random ones, including the ones with no key to recover;
 * its Keccak-256 to @noble/hashes on inputs of every length across several blocks and chunks.
 */
import assert from "node:assert/strict";
import { secp256k1 } from "@noble/curves/secp256k1";
import { keccak_256 } from "@noble/hashes/sha3";
import { getAddress, type Hex, recoverMessageAddress } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { createSiweMessage } from "viem/siwe";
import { checksumAddress, recoverPersonalSigner } from "../functions/_shared/auth/eth.ts";
import { keccak256, recoverPublicKey } from "../functions/_shared/auth/secp256k1.ts";
import { SECP256K1_WASM_BASE64 } from "../functions/_shared/auth/secp256k1-wasm.ts";
import { buildSiweMessage, type SiweFields } from "../functions/_shared/auth/siwe.ts";
import { Rng, seedFromEnv } from "./support/fuzz.ts";

const SEED = seedFromEnv();
const rng = new Rng(SEED);
const hex = (bytes: Uint8Array) =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
const randomKey = (): Hex => `0x${hex(rng.bytes(32))}`;
/** The checksummed address that signed `message`, as viem's recoverMessageAddress names it. */
const recoverPersonalSignAddress = (message: string, signature: Hex) =>
  checksumAddress(recoverPersonalSigner(message, signature));

Deno.test(`EIP-55: checksums equal viem's getAddress for 500 addresses, any input case (seed ${SEED})`, () => {
  for (let i = 0; i < 500; i++) {
    const lower = `0x${hex(rng.bytes(20))}`;
    const expected = getAddress(lower);
    assert.equal(checksumAddress(lower), expected);
    assert.equal(checksumAddress(lower.toUpperCase().replace("0X", "0x")), expected);
    assert.equal(checksumAddress(expected), expected);
  }
  for (
    const bad of [
      "",
      "0x",
      "0x123",
      `0x${"g".repeat(40)}`,
      `${"a".repeat(42)}`,
      `0x${"a".repeat(41)}`,
    ]
  ) {
    assert.throws(() => checksumAddress(bad), TypeError, bad);
  }
});

Deno.test(`EIP-191: recovery equals viem's for 60 keys and messages, ASCII and not (seed ${SEED})`, async () => {
  const texts = ["", "hello", "line one\nline two", "naïve café ☕ 署名", "x".repeat(2000)];
  for (let i = 0; i < 60; i++) {
    const account = privateKeyToAccount(randomKey());
    const message = `${texts[i % texts.length]}${i}`;
    const signature = await account.signMessage({ message });
    assert.equal(recoverPersonalSignAddress(message, signature), account.address);
    assert.equal(recoverPersonalSigner(message, signature), account.address.toLowerCase());
    assert.equal(await recoverMessageAddress({ message, signature }), account.address);
    // v as 0/1 as well as 27/28: the same signer.
    const v = Number.parseInt(signature.slice(130), 16);
    const lowV = `${signature.slice(0, 130)}${(v - 27).toString(16).padStart(2, "0")}` as Hex;
    assert.equal(recoverPersonalSignAddress(message, lowV), account.address);
    // Another message recovers someone else.
    assert.notEqual(recoverPersonalSignAddress(`${message}!`, signature), account.address);
  }
});

Deno.test("EIP-191: unrecoverable signatures throw instead of naming an address", () => {
  const zero = `0x${"00".repeat(64)}1b` as Hex;
  const rAtN = `0x${"fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141"}${
    "11".repeat(32)
  }1b` as Hex;
  const badV = `0x${"11".repeat(64)}1d` as Hex;
  const short = `0x${"11".repeat(64)}` as Hex;
  for (const signature of [zero, rAtN, badV, short]) {
    assert.throws(() => recoverPersonalSignAddress("hello", signature), signature);
  }
});

Deno.test(`EIP-4361: the builder writes exactly what viem's createSiweMessage writes (seed ${SEED})`, () => {
  const words = ["Sign", "in", "to", "the", "vault.", "No", "gas", "is", "spent", ""];
  for (let i = 0; i < 300; i++) {
    const issuedAt = new Date(Date.UTC(2026, 0, 1) + rng.between(0, 10 ** 10));
    const fields: SiweFields = {
      address: getAddress(`0x${hex(rng.bytes(20))}`),
      domain: rng.pick(["app.example.com", "127.0.0.1:54321", "localhost:8000"]),
      uri: rng.pick(["https://app.example.com", "http://127.0.0.1:54321/settings"]),
      chainId: rng.pick([1, 10, 8453, 11155111]),
      nonce: hex(rng.bytes(rng.between(8, 16))),
      issuedAt,
      ...(rng.between(0, 1)
        ? { statement: rng.pick(words) ? words.slice(0, rng.between(1, 9)).join(" ") : "" }
        : {}),
      ...(rng.between(0, 1) ? { scheme: rng.pick(["https", "http"]) } : {}),
      ...(rng.between(0, 1) ? { expirationTime: new Date(issuedAt.getTime() + 600_000) } : {}),
      ...(rng.between(0, 1) ? { notBefore: new Date(issuedAt.getTime() - 60_000) } : {}),
      ...(rng.between(0, 1) ? { requestId: `req-${rng.between(0, 10 ** 6)}` } : {}),
      ...(rng.between(0, 1)
        ? {
          resources: ["https://app.example.com/a", "ipfs://bafybeigdyrzt"].slice(
            0,
            rng.between(0, 2),
          ),
        }
        : {}),
    };
    assert.equal(
      buildSiweMessage(fields),
      createSiweMessage({ ...fields, resources: fields.resources?.slice(), version: "1" }),
      JSON.stringify(fields),
    );
  }
});

/** noble's recovery, the reference: the uncompressed key, or null where it finds none. */
function nobleRecover(compact: Uint8Array, hash: Uint8Array, recovery: number): string | null {
  try {
    return hex(
      secp256k1.Signature.fromCompact(compact).addRecoveryBit(recovery).recoverPublicKey(hash)
        .toRawBytes(false),
    );
  } catch {
    return null;
  }
}

function wasmRecover(compact: Uint8Array, hash: Uint8Array, recovery: number): string | null {
  try {
    return hex(recoverPublicKey(compact, hash, recovery));
  } catch {
    return null;
  }
}

Deno.test(`secp256k1: the WebAssembly recovery equals @noble/curves' on 400 real signatures, any hash (seed ${SEED})`, () => {
  for (let i = 0; i < 400; i++) {
    const privateKey = rng.bytes(32);
    // Hashes above the group order too (all 0xff…): both reduce them modulo n.
    const hash = i % 10 === 0 ? new Uint8Array(32).fill(0xff) : rng.bytes(32);
    let signature;
    try {
      signature = secp256k1.sign(hash, privateKey, { lowS: i % 2 === 0 });
    } catch {
      continue; // a random 32 bytes that is not a valid key (0 or ≥ n): no signature to check
    }
    const compact = signature.toCompactRawBytes();
    const expected = hex(secp256k1.getPublicKey(privateKey, false));
    assert.equal(wasmRecover(compact, hash, signature.recovery), expected);
    assert.equal(nobleRecover(compact, hash, signature.recovery), expected);
    // The other recovery id names another key (or none), the same one for both.
    assert.equal(
      wasmRecover(compact, hash, 1 - signature.recovery),
      nobleRecover(compact, hash, 1 - signature.recovery),
    );
  }
});

Deno.test(`secp256k1: on 1,500 random and edge-case (r, s) both recover the same key or both find none (seed ${SEED})`, () => {
  const n = secp256k1.CURVE.n;
  const p = secp256k1.CURVE.Fp.ORDER;
  const scalar = (value: bigint) => {
    const bytes = new Uint8Array(32);
    for (let i = 31, v = value; i >= 0; i--, v >>= 8n) bytes[i] = Number(v & 0xffn);
    return bytes;
  };
  const edges = [0n, 1n, 2n, n - 1n, n, n + 1n, p - 1n, p, 2n ** 256n - 1n];
  let recovered = 0;
  let refused = 0;
  for (let i = 0; i < 1500; i++) {
    const r = i % 3 === 0 ? scalar(rng.pick(edges)) : rng.bytes(32);
    const s = i % 5 === 0 ? scalar(rng.pick(edges)) : rng.bytes(32);
    const hash = i % 7 === 0 ? scalar(rng.pick(edges)) : rng.bytes(32);
    const compact = new Uint8Array([...r, ...s]);
    const recovery = rng.between(0, 1);
    const expected = nobleRecover(compact, hash, recovery);
    assert.equal(wasmRecover(compact, hash, recovery), expected, `${hex(compact)} ${hex(hash)}`);
    if (expected === null) refused++;
    else recovered++;
  }
  // Both outcomes were exercised, not only one.
  assert.ok(recovered > 100 && refused > 100, `${recovered} recovered, ${refused} refused`);
});

Deno.test("secp256k1: recovery refuses a wrong-sized signature or hash and a recovery id outside 0–1", () => {
  const compact = new Uint8Array(64).fill(1);
  const hash = new Uint8Array(32).fill(2);
  assert.throws(() => recoverPublicKey(compact.subarray(1), hash, 0), TypeError);
  assert.throws(() => recoverPublicKey(compact, hash.subarray(1), 0), TypeError);
  for (const id of [-1, 2, 3, 0.5]) {
    assert.throws(() => recoverPublicKey(compact, hash, id), TypeError, String(id));
  }
});

Deno.test("secp256k1: the embedded WebAssembly is the module its build recorded (sha256)", async () => {
  const bytes = Uint8Array.from(atob(SECP256K1_WASM_BASE64), (c) => c.charCodeAt(0));
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  const generated = await Deno.readTextFile(
    new URL("../functions/_shared/auth/secp256k1-wasm.ts", import.meta.url),
  );
  const recorded = /^\/\/ The module below: (\d+) bytes, sha256 ([0-9a-f]{64})$/m.exec(generated);
  assert.ok(recorded !== null, "build.sh records the module's size and sha256");
  assert.equal(bytes.length, Number(recorded[1]));
  assert.equal(hex(digest), recorded[2]);
});

Deno.test("EIP-191: recovery runs with the edge runtime's permissions only (--allow-net --allow-env, no file reads)", async () => {
  const account = privateKeyToAccount(randomKey());
  const message = "edge shape";
  const signature = await account.signMessage({ message });
  const script = `
    import { checksumAddress, recoverPersonalSigner } from ${
    JSON.stringify(
      new URL("../functions/_shared/auth/eth.ts", import.meta.url).href,
    )
  };
    console.log(checksumAddress(recoverPersonalSigner(${JSON.stringify(message)}, ${
    JSON.stringify(signature)
  })));`;
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--no-prompt", "--allow-net", "--allow-env", script],
    cwd: new URL("..", import.meta.url).pathname,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(output.stderr);
  assert.ok(output.success, stderr);
  assert.equal(new TextDecoder().decode(output.stdout).trim(), account.address);
});

Deno.test(`Keccak-256: the WebAssembly digest equals @noble/hashes' for every length 0–700 and across chunks (seed ${SEED})`, () => {
  for (let length = 0; length <= 700; length++) {
    const input = rng.bytes(length);
    assert.equal(hex(keccak256(input)), hex(keccak_256(input)), `length ${length}`);
  }
  // Around the 4096-byte chunk the module absorbs at a time, and several chunks.
  for (const length of [4095, 4096, 4097, 8192, 8193, 10_000, 20_000]) {
    const input = rng.bytes(length);
    assert.equal(hex(keccak256(input)), hex(keccak_256(input)), `length ${length}`);
  }
  // Parts hash as their concatenation, however they are cut.
  for (let i = 0; i < 200; i++) {
    const input = rng.bytes(rng.between(0, 600));
    const cut = rng.between(0, input.length);
    assert.equal(
      hex(keccak256(input.subarray(0, cut), input.subarray(cut))),
      hex(keccak_256(input)),
    );
  }
  // The well-known digest of the empty string.
  assert.equal(
    hex(keccak256()),
    "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470",
  );
});
