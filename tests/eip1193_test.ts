/**
 * How the browser client reads wallets' answers (sdk/src/eip1193.ts): a rejection however it is
 * wrapped, and chain ids in the shapes providers really return, never a misread chain.
 */
import assert from "node:assert/strict";
import { type Eip1193Provider, requestChainId, walletFailure } from "../sdk/src/eip1193.ts";
import { SignatureRejectedError, VaultError } from "../sdk/src/errors.ts";

Deno.test("a 4001 is a refusal however the wallet wraps it; any other failure is the wallet's error", () => {
  const rejected = { code: 4001, message: "User rejected the request." };
  for (
    const error of [
      rejected,
      { code: -32603, message: "Internal error", error: rejected }, // ethers
      // MetaMask with some hardware wallets: its own code around the user's refusal.
      { code: -32603, message: "Internal JSON-RPC error.", data: { originalError: rejected } },
      { message: "no outer code", data: { originalError: rejected } },
    ]
  ) {
    const failure = walletFailure(error, "sign");
    assert.ok(failure instanceof SignatureRejectedError, JSON.stringify(error));
    assert.equal(failure.step, "sign");
    assert.equal(failure.cause, error);
  }
  assert.equal(walletFailure(rejected, "connect", "Declined.").message, "Declined.");
  for (
    const [error, message] of [
      [{ code: 4100, message: "Locked", error: { code: -32000 } }, "Locked"],
      [{ error: { code: -32000 } }, "The wallet could not complete this."],
      [new Error("plain"), "plain"],
      [null, "The wallet could not complete this."],
    ] as const
  ) {
    const failure = walletFailure(error, "connect");
    assert.ok(failure instanceof VaultError && !(failure instanceof SignatureRejectedError));
    assert.equal(failure.code, "wallet_error");
    assert.equal(failure.message, message);
  }
});

Deno.test("eth_chainId: 0x-hex as EIP-1193 says, a decimal string or number as some answer, nothing else", async () => {
  const answering = (chainId: unknown): Eip1193Provider => ({
    request: () => Promise.resolve(chainId),
  });
  const read = [["0x1", 1], ["0x89", 137], ["0X2105", 8453], ["137", 137], ["10", 10], [
    8453,
    8453,
  ]] as const;
  for (const [answer, chainId] of read) {
    assert.equal(await requestChainId(answering(answer)), chainId, String(answer));
  }
  for (const answer of ["0x1zz", "0x", "", "1e3", "0x0", "0", " 1", null, undefined, {}, -1]) {
    await assert.rejects(
      requestChainId(answering(answer)),
      TypeError,
      JSON.stringify(answer) ?? "undefined",
    );
  }
});
