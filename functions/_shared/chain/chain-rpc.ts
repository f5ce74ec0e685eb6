/**
 * JSON-RPC to the chains contract-wallet signatures are checked on (CHAIN_RPC_URLS): `eth_call` at
 * the latest block, under one deadline, believing only well-formed answers from the chain the URL
 * was configured for. Whatever goes wrong on the way (down, slow, an HTTP error, garbage, another
 * chain) is one error, `chain_unavailable` (503, Retry-After): never a pass, never a 500.
 *
 * The URL may carry an API key, so it appears nowhere but in the fetch itself: not in logs (the
 * reason is one of a few fixed words), not in errors (fetch's own error text, which names the URL,
 * is dropped), not in answers.
 */
import { bytesToHex, hexToBytes } from "@noble/hashes/utils";
import { ServiceError } from "../http/errors.ts";
import type { Logger } from "../http/log.ts";

export const CHAIN_RETRY_AFTER_SECONDS = 5;
// eth_call answers for a signature check are a few words; a larger one is not worth reading.
const MAX_ANSWER_BYTES = 256 * 1024;
// Gas for one check: a passkey (P-256 in Solidity) or a large multisig plus an ERC-6492 deployment
// fit in a few million. The cap keeps a crafted signature from costing the RPC (and the account
// paying for it) a whole block's worth of computation per call.
const CALL_GAS_LIMIT = 10_000_000;

/** What an eth_call answered: the return data, or that the call reverted. */
export type CallOutcome =
  | { readonly reverted: false; readonly data: Uint8Array }
  | { readonly reverted: true };

export interface EthCall {
  /** Absent for a deployless call (the data is init code, run as a constructor). */
  readonly to?: string;
  readonly data: Uint8Array;
}

export interface ChainRpc {
  /** The chains with an RPC, in the order configured. */
  readonly chainIds: readonly number[];
  /** A call at the latest block. Throws `chain_unavailable` when no trustworthy answer came. */
  call(chainId: number, call: EthCall, signal: AbortSignal): Promise<CallOutcome>;
  /** The error for an answer the caller found impossible (a lying RPC), logged like the others. */
  unavailable(chainId: number, reason: string): ServiceError;
}

export interface ChainRpcOptions {
  readonly log: Logger;
  readonly fetch?: typeof fetch;
}

/** A failure on the way to an answer; `reason` is a fixed word, safe to log. */
class RpcFailure extends Error {
  constructor(readonly reason: string, readonly rpcCode: number | null = null) {
    super(reason);
  }
}

type RpcAnswer =
  | { readonly result: unknown }
  | { readonly error: { readonly code: number; readonly message: string } };

const HEX_DATA = /^0x(?:[0-9a-fA-F]{2})*$/;
const HEX_QUANTITY = /^0x(?:0|[1-9a-fA-F][0-9a-fA-F]{0,15})$/;

export function createChainRpc(
  urls: ReadonlyMap<number, string>,
  options: ChainRpcOptions,
): ChainRpc {
  const fetchImpl = options.fetch ?? fetch;
  // Chains whose RPC has said, once, that it serves that chain (eth_chainId): a URL pointing at
  // another chain (a typo, a provider's mix-up, a liar) would otherwise answer for the wrong one.
  const confirmed = new Set<number>();
  let nextId = 1;

  async function request(
    url: string,
    method: string,
    params: unknown[],
    signal: AbortSignal,
  ): Promise<RpcAnswer> {
    const id = nextId++;
    let response: Response;
    try {
      response = await fetchImpl(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
        redirect: "manual",
        signal,
      });
    } catch {
      throw new RpcFailure(signal.aborted ? "timeout" : "unreachable");
    }
    if (response.status !== 200) {
      await response.body?.cancel().catch(() => {});
      throw new RpcFailure(`http_${response.status}`);
    }
    const text = await readAnswer(response, signal);
    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch {
      throw new RpcFailure("malformed_answer");
    }
    if (typeof answer !== "object" || answer === null || Array.isArray(answer)) {
      throw new RpcFailure("malformed_answer");
    }
    const fields = answer as Record<string, unknown>;
    if (fields.jsonrpc !== "2.0" || fields.id !== id) throw new RpcFailure("malformed_answer");
    if ("error" in fields) {
      const error = fields.error as Record<string, unknown> | null;
      if (
        typeof error !== "object" || error === null || typeof error.code !== "number" ||
        typeof error.message !== "string"
      ) {
        throw new RpcFailure("malformed_answer");
      }
      return { error: { code: error.code, message: error.message } };
    }
    if (!("result" in fields)) throw new RpcFailure("malformed_answer");
    return { result: fields.result };
  }

  async function confirmChain(chainId: number, url: string, signal: AbortSignal): Promise<void> {
    if (confirmed.has(chainId)) return;
    const answer = await request(url, "eth_chainId", [], signal);
    if ("error" in answer) throw new RpcFailure("rpc_error", answer.error.code);
    if (typeof answer.result !== "string" || !HEX_QUANTITY.test(answer.result)) {
      throw new RpcFailure("malformed_answer");
    }
    if (Number(answer.result) !== chainId) throw new RpcFailure("chain_mismatch");
    confirmed.add(chainId);
  }

  function unavailable(chainId: number, reason: string, rpcCode: number | null = null) {
    options.log.error("chain_rpc_failed", { chain_id: chainId, reason, rpc_code: rpcCode });
    return new ServiceError(
      "chain_unavailable",
      `Chain ${chainId} could not be asked about this contract wallet's signature; ` +
        "nothing was spent, try again shortly.",
      { chainId, retryAfterSeconds: CHAIN_RETRY_AFTER_SECONDS },
    );
  }

  return {
    chainIds: [...urls.keys()],
    unavailable: (chainId, reason) => unavailable(chainId, reason),
    async call(chainId, call, signal) {
      const url = urls.get(chainId);
      if (url === undefined) throw unavailable(chainId, "no_rpc");
      try {
        await confirmChain(chainId, url, signal);
        const answer = await request(url, "eth_call", [
          {
            ...(call.to === undefined ? {} : { to: call.to }),
            data: `0x${bytesToHex(call.data)}`,
            gas: `0x${CALL_GAS_LIMIT.toString(16)}`,
          },
          "latest",
        ], signal);
        if ("error" in answer) {
          // A revert, or running out of the gas the call was given, is the contract's answer
          // (geth and most nodes: code 3 "execution reverted"; others say so in the message);
          // any other error is the node's, not the contract's.
          if (answer.error.code === 3 || /revert|out of gas/i.test(answer.error.message)) {
            return { reverted: true };
          }
          throw new RpcFailure("rpc_error", answer.error.code);
        }
        if (typeof answer.result !== "string" || !HEX_DATA.test(answer.result)) {
          throw new RpcFailure("malformed_answer");
        }
        return { reverted: false, data: hexToBytes(answer.result.slice(2)) };
      } catch (error) {
        if (error instanceof RpcFailure) throw unavailable(chainId, error.reason, error.rpcCode);
        throw error;
      }
    },
  };
}

/** The body as text, at most MAX_ANSWER_BYTES, under the caller's deadline. */
async function readAnswer(response: Response, signal: AbortSignal): Promise<string> {
  if (response.body === null) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > MAX_ANSWER_BYTES) {
        await reader.cancel().catch(() => {});
        throw new RpcFailure("oversized_answer");
      }
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof RpcFailure) throw error;
    throw new RpcFailure(signal.aborted ? "timeout" : "unreachable");
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new RpcFailure("malformed_answer");
  }
}
