/**
 * One JSON-RPC stand-in for several chains, over https (production accepts no other RPC): each
 * chain at `/chain/<id>` answers the service's deployless validator call as the validator would,
 * for one-owner contract wallets set per chain, so the same address can be a wallet with another
 * owner on each chain. For the edge shape, whose functions run as production and cannot start
 * ganache; tests/support/evm.ts has the real chains.
 */
import { decodeAbiParameters, type Hex, recoverAddress, toHex } from "viem";
import { ERC6492_VALIDATOR_INIT_CODE } from "../../functions/_shared/chain/erc6492-validator.ts";

export interface WalletRpcStandIn {
  /** CHAIN_RPC_URLS for every chain it answers. */
  readonly chainRpcUrls: string;
  /** A CA file that makes its certificate trusted (DENO_CERT for the functions). */
  readonly caFile: string;
  /** eth_call requests seen, by chain. */
  readonly calls: Map<number, number>;
  /** Makes `owner` the one owner of the wallet at `address` on `chainId`. */
  setOwner(chainId: number, address: Hex, owner: Hex): void;
  close(): Promise<void>;
}

const VALIDATOR_PREFIX = toHex(ERC6492_VALIDATOR_INIT_CODE);

export async function startWalletRpcStandIn(
  chainIds: readonly number[],
): Promise<WalletRpcStandIn> {
  const dir = await Deno.makeTempDir({ prefix: "rpc-stand-in-" });
  const { cert, key, caFile } = await loopbackCertificate(dir);
  const owners = new Map<string, string>();
  const calls = new Map<number, number>();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, cert, key, onListen() {} },
    async (request) => {
      const chainId = Number(/^\/chain\/(\d+)$/.exec(new URL(request.url).pathname)?.[1]);
      const call = await request.json() as {
        id: number;
        method: string;
        params: [{ data: Hex }, string];
      };
      if (!chainIds.includes(chainId) || call.method !== "eth_call") {
        return Response.json({
          jsonrpc: "2.0",
          id: call.id,
          error: { code: -32601, message: "no" },
        });
      }
      calls.set(chainId, (calls.get(chainId) ?? 0) + 1);
      const data = call.params[0].data.toLowerCase();
      if (!data.startsWith(VALIDATOR_PREFIX)) throw new Error("not the validator's call");
      const [, signer, hash, signature] = decodeAbiParameters(
        [{ type: "uint256" }, { type: "address" }, { type: "bytes32" }, { type: "bytes" }],
        `0x${data.slice(VALIDATOR_PREFIX.length)}`,
      );
      const owner = owners.get(`${chainId}:${signer.toLowerCase()}`);
      let valid = false;
      try {
        valid = owner !== undefined && (await recoverAddress({ hash, signature })) === owner;
      } catch {
        // not a signature: the wallet says no
      }
      const word = (value: number) => value.toString(16).padStart(64, "0");
      return Response.json({
        jsonrpc: "2.0",
        id: call.id,
        result: `0x${word(chainId)}${word(valid ? 1 : 0)}`,
      });
    },
  );
  const base = `https://127.0.0.1:${server.addr.port}`;
  return {
    chainRpcUrls: chainIds.map((id) => `${id}=${base}/chain/${id}`).join(","),
    caFile,
    calls,
    setOwner: (chainId, address, owner) =>
      void owners.set(`${chainId}:${address.toLowerCase()}`, owner),
    async close() {
      await server.shutdown();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** A throwaway CA and a certificate it signed for 127.0.0.1 (a CA cannot serve as the leaf). */
async function loopbackCertificate(dir: string) {
  const openssl = async (...args: string[]) => {
    const { success, stderr } = await new Deno.Command("openssl", {
      args,
      cwd: dir,
      stderr: "piped",
    })
      .output();
    if (!success) throw new Error(`openssl ${args[0]}: ${new TextDecoder().decode(stderr)}`);
  };
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  await openssl(
    "req",
    "-x509",
    ...ec,
    "-keyout",
    "ca.key",
    "-out",
    "ca.pem",
    "-days",
    "1",
    "-subj",
    "/CN=wallet-vault test CA",
  );
  await openssl("req", ...ec, "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=127.0.0.1");
  await Deno.writeTextFile(`${dir}/leaf.ext`, "subjectAltName=IP:127.0.0.1\n");
  await openssl(
    "x509",
    "-req",
    "-in",
    "leaf.csr",
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "leaf.pem",
    "-days",
    "1",
    "-extfile",
    "leaf.ext",
  );
  return {
    cert: await Deno.readTextFile(`${dir}/leaf.pem`),
    key: await Deno.readTextFile(`${dir}/leaf.key`),
    caFile: `${dir}/ca.pem`,
  };
}
