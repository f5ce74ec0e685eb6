/**
 * Which chains contract wallets can sign in from: those with an RPC (CHAIN_RPC_URLS), or the
 * chains of the verifier a test or the local server hands in. Apart from contract-proof.ts, so
 * that a function names the others at start without loading the chain clients.
 */
import type { ServiceContext } from "../_shared/context.ts";

function contractWalletChainIds(
  { config, chainVerifier }: Pick<ServiceContext, "config" | "chainVerifier">,
): readonly number[] {
  return chainVerifier?.chainIds ?? [...config.chainRpcUrls.keys()];
}

/** Names, once at start, the chains creators may sign in from where contract wallets cannot. */
export function logChainsWithoutContractWallets(
  context: Pick<ServiceContext, "config" | "chainVerifier" | "log">,
): void {
  const { config, log } = context;
  const rpcChainIds = contractWalletChainIds(context);
  const withoutRpc = config.allowedChainIds === null
    ? null
    : config.allowedChainIds.filter((id) => !rpcChainIds.includes(id));
  if (withoutRpc === null || withoutRpc.length > 0) {
    log.info("contract_wallets_unavailable", {
      chain_ids: withoutRpc === null ? "all but the rpc chains" : withoutRpc.join(","),
      rpc_chain_ids: rpcChainIds.join(","),
    });
  }
}
