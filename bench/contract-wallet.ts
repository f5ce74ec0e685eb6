/**
 * `deno run -A bench/contract-wallet.ts`: sign-in latency of a key (EOA) and of a smart-contract
 * wallet (ERC-1271, and ERC-6492 before deployment), one after another (concurrency 1), against the
 * local server as its own process and a local chain (ganache, under Node) on loopback.
 *
 * Only POST /api/auth/wallet-proof is timed: nonces and signatures are made beforehand. A contract
 * sign-in adds a database call (nonce check and RPC budgets) and the chain's eth_call (which also
 * proves the chain; no other request) to a key's.
 *
 * Knobs: BENCH_SIGNINS (200 per kind), BENCH_ENGINES ("postgres,pglite"), BENCH_OUT
 * (bench/results/contract-wallet.json). `--keys-only` skips the chain (for a tree without
 * contract-wallet support, to compare key sign-ins before and after).
 */
import { hashMessage, type Hex } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import { integerKnob } from "./knobs.ts";
import { serverEnv, startServer } from "./processes.ts";
import { createDatabase, type Engine, findPostgres, newAccount, percentile } from "./support.ts";

const SIGNINS = integerKnob("BENCH_SIGNINS", 200);
const ENGINES = (Deno.env.get("BENCH_ENGINES") ?? "postgres,pglite").split(",") as Engine[];
const OUT = Deno.env.get("BENCH_OUT") ?? "bench/results/contract-wallet.json";
const KEYS_ONLY = Deno.args.includes("--keys-only");
const CHAIN_ID = 1337;

interface Proof {
  readonly message: string;
  readonly signature: string;
}

type Signer = (message: string) => Promise<string>;

async function post(url: string, body: unknown) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${url}: ${response.status} ${text}`);
  return JSON.parse(text);
}

async function proofs(base: string, address: Hex, sign: Signer): Promise<Proof[]> {
  const prepared: Proof[] = [];
  for (let i = 0; i < SIGNINS; i++) {
    const { message } = await post(`${base}/api/auth/nonce`, { address, chainId: CHAIN_ID });
    prepared.push({ message, signature: await sign(message) });
  }
  return prepared;
}

async function time(base: string, prepared: Proof[]) {
  const ms: number[] = [];
  for (const proof of prepared) {
    const start = performance.now();
    await post(`${base}/api/auth/wallet-proof`, proof);
    ms.push(performance.now() - start);
  }
  ms.sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 100) / 100;
  return {
    signIns: ms.length,
    p50Ms: round(percentile(ms, 50)),
    p95Ms: round(percentile(ms, 95)),
    meanMs: round(ms.reduce((a, b) => a + b, 0) / ms.length),
  };
}

const postgresUrl = await findPostgres();
const rows: Record<string, unknown>[] = [];
const evm = KEYS_ONLY ? null : await import("../tests/support/evm.ts");
const chain = evm === null ? null : await evm.startChain(CHAIN_ID);
try {
  const contracts = evm === null ? null : await evm.compileTestWallets();
  for (const engine of ENGINES) {
    if (engine === "postgres" && postgresUrl === null) continue;
    const db = await createDatabase(engine, postgresUrl);
    const server = await startServer(serverEnv({
      ...db.env,
      ALLOWED_CHAIN_IDS: String(CHAIN_ID),
      ...(chain === null ? {} : {
        CHAIN_RPC_URLS: `${CHAIN_ID}=${chain.url}`,
        RATE_LIMIT_RPC_PER_MINUTE: "1000000",
        RATE_LIMIT_RPC_PER_ADDRESS_PER_MINUTE: "1000000",
        RATE_LIMIT_RPC_PER_ADDRESS_PER_CLIENT_PER_MINUTE: "1000000",
      }),
    }));
    try {
      const key = newAccount();
      const kinds: [string, Hex, Signer][] = [
        ["key (EOA)", key.address, (message) => key.signMessage({ message })],
      ];
      if (evm !== null && chain !== null && contracts !== null) {
        const owner = newAccount();
        const byHash = (o: PrivateKeyAccount) => (message: string) =>
          o.sign({ hash: hashMessage(message) });
        const { encodeDeployData, encodeFunctionData, parseAbi, serializeErc6492Signature } =
          await import("viem");
        const wallet = await evm.deploy(
          chain,
          encodeDeployData({
            abi: parseAbi(["constructor(address[] owners)"]),
            bytecode: contracts.OwnerWallet.bytecode,
            args: [[owner.address]],
          }),
        );
        const factory = await evm.deploy(chain, contracts.WalletFactory.bytecode);
        const salt = evm.freshSalt();
        const factoryAbi = parseAbi([
          "function deploy(address owner, bytes32 salt) returns (address)",
          "function predict(address owner, bytes32 salt) view returns (address)",
        ]);
        const predicted = await chain.rpc<Hex>("eth_call", [{
          to: factory,
          data: encodeFunctionData({
            abi: factoryAbi,
            functionName: "predict",
            args: [owner.address, salt],
          }),
        }, "latest"]);
        const deployCall = encodeFunctionData({
          abi: factoryAbi,
          functionName: "deploy",
          args: [owner.address, salt],
        });
        kinds.push(["contract wallet (ERC-1271)", wallet, byHash(owner)]);
        kinds.push([
          "counterfactual wallet (ERC-6492)",
          `0x${predicted.slice(26)}`,
          async (message) =>
            serializeErc6492Signature({
              address: factory,
              data: deployCall,
              signature: await byHash(owner)(message),
            }),
        ]);
      }
      for (const [kind, address, sign] of kinds) {
        const prepared = await proofs(server.url, address, sign);
        // One warm-up sign-in.
        await post(`${server.url}/api/auth/wallet-proof`, prepared.shift()!);
        const row = {
          engine,
          measure: `POST /api/auth/wallet-proof: ${kind}`,
          ...await time(server.url, prepared),
        };
        rows.push(row);
        console.error(JSON.stringify(row));
      }
    } finally {
      await server.stop();
      await db.drop();
    }
  }
} finally {
  await chain?.stop();
}

const table = rows.map((r) =>
  `| ${r.engine} | ${r.measure} | ${r.signIns} | ${r.p50Ms} | ${r.p95Ms} |`
);
console.log(
  ["| engine | measure | sign-ins | p50 ms | p95 ms |", "| --- | --- | --: | --: | --: |", ...table]
    .join("\n"),
);
if (!KEYS_ONLY) {
  await Deno.writeTextFile(
    OUT,
    JSON.stringify({ at: new Date().toISOString(), concurrency: 1, rows }, null, 2) + "\n",
  );
}
