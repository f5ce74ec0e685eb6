/**
 * JSON-RPC to the chains contract-wallet signatures are checked on (CHAIN_RPC_URLS): `eth_call` at
 * the latest block, one HTTP request under one deadline, believing only well-formed answers.
 * Whatever goes wrong on the way (down, slow, an HTTP error, garbage) is one error,
 * `chain_unavailable` (503, Retry-After): never a pass, never a 500. Which chain answered is
 * proven by the call itself, every time (contract-signatures.ts): a URL's chain can change under
 * a running process (a provider's failover, a misrouting, DNS), so no earlier answer vouches.
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

interface RpcError {
  readonly code: number;
  readonly message: string;
  readonly data?: unknown;
}

type RpcAnswer = { readonly result: unknown } | { readonly error: RpcError };

const HEX_DATA = /^0x(?:[0-9a-fA-F]{2})*$/;
// A revert as nodes word it: geth, reth, anvil and besu ("execution reverted", a reason after a
// colon), ganache ("VM Exception while processing transaction: revert", a reason after a space).
const GETH_REVERT = /^execution reverted(?::.*)?$/is;
const GANACHE_REVERT = /^VM Exception while processing transaction: revert(?: .*)?$/s;

/**
 * Whether a JSON-RPC error is the call reverting, told by its shape: code 3 (EIP-1474's execution
 * error, which geth and its kin send with the revert data) or -32000 (geth without data, ganache),
 * a message that is a revert's own, and data, if any, that is hex. Anything else, a message that
 * merely mentions a revert included, is the node's trouble, not the contract's answer.
 */
function isRevert(error: RpcError): boolean {
  if (error.data !== undefined && !(typeof error.data === "string" && HEX_DATA.test(error.data))) {
    return false;
  }
  if (error.code === 3) return GETH_REVERT.test(error.message);
  if (error.code === -32000) {
    return GETH_REVERT.test(error.message) || GANACHE_REVERT.test(error.message);
  }
  return false;
}

export function createChainRpc(
  urls: ReadonlyMap<number, string>,
  options: ChainRpcOptions,
): ChainRpc {
  const fetchImpl = options.fetch ?? fetch;
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
      return {
        error: {
          code: error.code,
          message: error.message,
          ...("data" in error ? { data: error.data } : {}),
        },
      };
    }
    if (!("result" in fields)) throw new RpcFailure("malformed_answer");
    return { result: fields.result };
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
        const answer = await request(url, "eth_call", [
          {
            ...(call.to === undefined ? {} : { to: call.to }),
            data: `0x${bytesToHex(call.data)}`,
            gas: `0x${CALL_GAS_LIMIT.toString(16)}`,
          },
          "latest",
        ], signal);
        if ("error" in answer) {
          if (isRevert(answer.error)) return { reverted: true };
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
