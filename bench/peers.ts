/**
 * In-process: bare signature recovery, and the sign-in checks of the peers (the `siwe` package,
 * viem's verifySiweMessage) beside ours.
 */
import { SiweMessage } from "siwe";
import { createPublicClient, custom, recoverMessageAddress } from "viem";
import { verifySiweMessage, type VerifySiweMessageParameters } from "viem/siwe";
import { recoverPublicKey } from "../functions/_shared/auth/eth.ts";
import { personalMessageHash } from "../functions/_shared/auth/eth.ts";
import {
  buildSiweMessage,
  checkSiweMessage,
  verifySignature,
} from "../functions/_shared/auth/siwe.ts";
import { timeLoop } from "./http-load.ts";
import type { Row, RunResult } from "./summary.ts";
import { newAccount } from "./support.ts";

type Timed = Awaited<ReturnType<typeof timeLoop>>;

export async function inProcess(result: RunResult) {
  const account = newAccount();
  const origin = "http://127.0.0.1:54321";
  const domain = "127.0.0.1:54321";
  const nonce = "benchNonce0123456789abcdefABCDEF";
  const message = buildSiweMessage({
    address: account.address,
    domain,
    uri: origin,
    chainId: 1,
    nonce,
    issuedAt: new Date(),
    expirationTime: new Date(Date.now() + 3_600_000),
    statement: "Sign in to wallet-vault-bench.",
  });
  const signature = await account.signMessage({ message });
  const row = (
    key: string,
    measure: string,
    timed: Timed,
    baseline: [label: string, timed: Timed] | null,
  ): Row => ({
    id: `in-process/${key}`,
    engine: "in-process",
    measure,
    concurrency: 1,
    requests: timed.runs,
    errors: 0,
    p50Ms: timed.p50Ms,
    p99Ms: timed.p99Ms,
    rps: timed.opsPerSecond,
    baseline: baseline?.[0] ?? null,
    baselineP50Ms: baseline?.[1].p50Ms ?? null,
    ratio: baseline ? timed.p50Ms / baseline[1].p50Ms : null,
  });

  // The floor's recovery (viem, as when the floor was set), and ours, for comparison only.
  const recovery = await timeLoop(() => recoverMessageAddress({ message, signature }), 1500);
  const hash = personalMessageHash(message);
  const compact = Uint8Array.from(
    signature.slice(2, 130).match(/../g)!.map((byte) => Number.parseInt(byte, 16)),
  );
  const v = Number.parseInt(signature.slice(130), 16) - 27;
  const ownRecovery = await timeLoop(() => recoverPublicKey(compact, hash, v), 1500);

  const ours = await timeLoop(() => {
    const fields = checkSiweMessage(message, {
      origins: [origin],
      chainIds: null,
      now: new Date(),
      clockSkewMs: 60_000,
    });
    verifySignature(message, signature, fields.address);
  }, 1500);
  const siwe = await timeLoop(async () => {
    const verified = await new SiweMessage(message).verify({ signature, domain, nonce });
    if (!verified.success) throw new Error("siwe verify failed");
  }, 1500);
  // viem's own check, EOA only: `mode: "eoa"` recovers the signer before any contract call, and
  // the client's transport refuses every request, so an RPC call would fail the row, not hide in it.
  let rpcCalls = 0;
  const client = createPublicClient({
    transport: custom({
      request: () => {
        rpcCalls++;
        throw new Error("no RPC in the bench");
      },
    }),
  });
  const viemSiwe = await timeLoop(async () => {
    const verified = await verifySiweMessage(client, {
      message,
      signature,
      domain,
      nonce,
      mode: "eoa",
    } as VerifySiweMessageParameters);
    if (!verified) throw new Error("viem verifySiweMessage failed");
  }, 1500);
  if (rpcCalls !== 0) throw new Error(`viem verifySiweMessage made ${rpcCalls} RPC calls`);

  // Ours against the bare recovery it cannot beat, the peers against ours.
  const vsRecovery: [string, Timed] = ["viem recovery", recovery];
  const vsOurs: [string, Timed] = ["ours", ours];
  result.rows.push(
    row("recovery", "bare secp256k1 recovery (viem recoverMessageAddress)", recovery, null),
    row(
      "own-recovery",
      "our secp256k1 recovery (libsecp256k1, WebAssembly)",
      ownRecovery,
      vsRecovery,
    ),
    row("ours", "our message check + signature verify (siwe.ts)", ours, vsRecovery),
    row("siwe", "peer: siwe package verify (SiweMessage.verify, ethers)", siwe, vsOurs),
    row("viem-siwe", "peer: viem verifySiweMessage (EOA, no RPC)", viemSiwe, vsOurs),
  );
  return {
    /** The floor's recovery timed again now, beside the route it is the floor of. */
    recoveryNow: async () =>
      (await timeLoop(() => recoverMessageAddress({ message, signature }), 500)).p50Ms,
  };
}
