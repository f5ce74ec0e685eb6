/**
 * functions/_shared/eth.ts and the message builder against viem, the library they replace in the
 * functions (tests still have it): EIP-55 checksums, EIP-191 personal-sign recovery and the
 * EIP-4361 layout must agree exactly, on seeded random keys, messages and fields.
 */
import assert from "node:assert/strict";
import { getAddress, type Hex, recoverMessageAddress } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { createSiweMessage } from "viem/siwe";
import { checksumAddress, recoverPersonalSignAddress } from "../functions/_shared/eth.ts";
import { buildSiweMessage, type SiweFields } from "../functions/_shared/siwe.ts";
import { Rng, seedFromEnv } from "./support/fuzz.ts";

const SEED = seedFromEnv();
const rng = new Rng(SEED);
const hex = (bytes: Uint8Array) =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
const randomKey = (): Hex => `0x${hex(rng.bytes(32))}`;

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
