/**
 * A real EVM on loopback for the contract-wallet tests: ganache (npm) run by Node as a process of
 * its own on a free port, contracts compiled at test time by solc (npm, WebAssembly), and an RPC
 * proxy in front of a chain that can be taken down, slowed or made to lie.
 *
 * Ganache comes from the npm registry through npm's own cache (`npm exec`), so a fresh clone with
 * Node, npm and Deno needs nothing else. It runs under Node rather than Deno: under Deno its HTTP
 * server answers "method does not exist" to every call. The child is started with a piped stdin
 * and exits when that pipe closes, so even a test run that dies leaves no chain behind.
 */
import solc from "solc";
import { type Hex, keccak256, toHex } from "viem";
import { type PrivateKeyAccount } from "viem/accounts";

export const GANACHE_VERSION = "7.9.2";
export const SOLC_SETTINGS = {
  // ganache 7 runs Shanghai: no Cancun opcodes (solc 0.8.28 targets Cancun unless told).
  evmVersion: "shanghai",
  optimizer: { enabled: true, runs: 200 },
} as const;

// ---------------------------------------------------------------------------------------------
// solc

export interface Compiled {
  readonly abi: readonly unknown[];
  readonly bytecode: Hex;
}

/** Compiles one Solidity source; every contract in it by name. Throws on any compiler error. */
export function compileSolidity(sourceName: string, content: string): Record<string, Compiled> {
  const input = {
    language: "Solidity",
    sources: { [sourceName]: { content } },
    settings: {
      ...SOLC_SETTINGS,
      outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input)));
  const errors = (output.errors ?? []).filter((e: { severity: string }) => e.severity === "error");
  if (errors.length > 0) {
    throw new Error(errors.map((e: { formattedMessage: string }) => e.formattedMessage).join("\n"));
  }
  const contracts: Record<string, Compiled> = {};
  for (const [name, contract] of Object.entries(output.contracts[sourceName])) {
    const { abi, evm } = contract as { abi: unknown[]; evm: { bytecode: { object: string } } };
    contracts[name] = { abi, bytecode: `0x${evm.bytecode.object}` };
  }
  return contracts;
}

export function solcVersion(): string {
  return solc.version();
}

export const VALIDATOR_SOURCE_NAME = "erc6492-validator.sol";
const VALIDATOR_SOURCE = new URL(
  "../../functions/_shared/chain/erc6492-validator.sol",
  import.meta.url,
);
const TEST_WALLETS_SOURCE = new URL("./contracts/TestWallets.sol", import.meta.url);

/** The validator's init code, compiled now from the committed source. */
export async function compileValidator(): Promise<Hex> {
  const source = await Deno.readTextFile(VALIDATOR_SOURCE);
  return compileSolidity(VALIDATOR_SOURCE_NAME, source).ERC6492Validator.bytecode;
}

export async function compileTestWallets(): Promise<Record<string, Compiled>> {
  return compileSolidity("TestWallets.sol", await Deno.readTextFile(TEST_WALLETS_SOURCE));
}

// ---------------------------------------------------------------------------------------------
// ganache

let ganachePackage: Promise<string> | null = null;

/** The ganache package directory in npm's cache, fetched from the registry on first use. */
function ganacheDirectory(): Promise<string> {
  ganachePackage ??= (async () => {
    const { success, stdout, stderr } = await new Deno.Command("npm", {
      args: ["exec", "--yes", `--package=ganache@${GANACHE_VERSION}`, "-c", "command -v ganache"],
      stdout: "piped",
      stderr: "piped",
      env: { npm_config_update_notifier: "false" },
    }).output();
    const bin = new TextDecoder().decode(stdout).trim();
    if (!success || bin === "") {
      throw new Error(
        `npm could not provide ganache@${GANACHE_VERSION}: ${
          new TextDecoder().decode(stderr).slice(-500)
        }`,
      );
    }
    // …/node_modules/.bin/ganache -> …/node_modules/ganache/dist/node/cli.js
    const cli = await Deno.realPath(bin);
    return cli.replace(/\/dist\/node\/cli\.js$/, "");
  })();
  return ganachePackage;
}

// Runs in Node: ganache's server on the given port, a line on stdout once it listens, and an exit
// as soon as stdin ends (the test closed it, or the test process is gone).
const GANACHE_LAUNCHER = `
const [dir, port, chainId] = process.argv.slice(1);
const ganache = require(dir);
const server = ganache.server({
  chain: { chainId: Number(chainId) },
  wallet: { deterministic: true },
  logging: { quiet: true },
});
server.listen(Number(port), "127.0.0.1", (error) => {
  if (error) { console.error(String(error)); process.exit(1); }
  console.log("listening");
});
process.stdin.on("end", () => process.exit(0));
process.stdin.on("error", () => process.exit(0));
process.stdin.resume();
`;

export interface LocalChain {
  readonly chainId: number;
  readonly url: string;
  rpc<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  stop(): Promise<void>;
}

export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

export async function startChain(chainId: number): Promise<LocalChain> {
  const dir = await ganacheDirectory();
  const port = freePort();
  const child = new Deno.Command("node", {
    args: ["-e", GANACHE_LAUNCHER, dir, String(port), String(chainId)],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stdin = child.stdin.getWriter();
  let stderr = "";
  const stderrDone = child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({ write: (text) => void (stderr = (stderr + text).slice(-4000)) }),
  );
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  while (!seen.includes("listening")) {
    const { value, done } = await lines.read();
    if (done) {
      await stderrDone.catch(() => {});
      throw new Error(`ganache exited before listening: ${stderr}`);
    }
    seen += value;
  }
  // Keep draining stdout so the child never blocks on a full pipe.
  const stdoutDone = (async () => {
    while (!(await lines.read()).done) { /* drain */ }
  })();
  const url = `http://127.0.0.1:${port}`;
  return {
    chainId,
    url,
    rpc: (method, params = []) => jsonRpc(url, method, params),
    async stop() {
      await stdin.close().catch(() => {});
      const exited = await Promise.race([
        child.status.then(() => true),
        new Promise<false>((resolve) => setTimeout(() => resolve(false), 5000)),
      ]);
      if (!exited) child.kill("SIGKILL");
      await child.status;
      await Promise.allSettled([stdoutDone, stderrDone]);
    },
  };
}

let rpcId = 1;

export async function jsonRpc<T = unknown>(
  url: string,
  method: string,
  params: unknown[] = [],
): Promise<T> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: rpcId++, method, params }),
  });
  const answer = await response.json();
  if (answer.error) throw new Error(`${method}: ${answer.error.message}`);
  return answer.result as T;
}

/** Deploys from ganache's first (unlocked) account with an explicit gas limit: ganache 7
 * estimates deployments badly. Returns the new contract's address. */
export async function deploy(chain: LocalChain, initCode: Hex): Promise<Hex> {
  const [from] = await chain.rpc<Hex[]>("eth_accounts");
  const hash = await chain.rpc<Hex>("eth_sendTransaction", [
    { from, data: initCode, gas: toHex(5_000_000) },
  ]);
  return (await receipt(chain, hash)).contractAddress!;
}

/** Sends a call as a transaction from ganache's first account; returns once it is mined. */
export async function transact(chain: LocalChain, to: Hex, data: Hex): Promise<void> {
  const [from] = await chain.rpc<Hex[]>("eth_accounts");
  const hash = await chain.rpc<Hex>("eth_sendTransaction", [
    { from, to, data, gas: toHex(5_000_000) },
  ]);
  await receipt(chain, hash);
}

/**
 * Deploys from `deployer`'s first transaction (nonce 0), signed here: the same key on two chains
 * puts the contract at the same address on both, whoever it is for.
 */
export async function deployAsFirstTransaction(
  chain: LocalChain,
  deployer: PrivateKeyAccount,
  initCode: Hex,
): Promise<Hex> {
  await chain.rpc("evm_setAccountBalance", [deployer.address, toHex(10n ** 18n)]);
  const signed = await deployer.signTransaction({
    type: "legacy",
    chainId: chain.chainId,
    nonce: 0,
    gas: 5_000_000n,
    gasPrice: 20_000_000_000n,
    data: initCode,
  });
  const hash = await chain.rpc<Hex>("eth_sendRawTransaction", [signed]);
  return (await receipt(chain, hash)).contractAddress!;
}

async function receipt(chain: LocalChain, hash: Hex) {
  const mined = await chain.rpc<{ status: Hex; contractAddress: Hex | null } | null>(
    "eth_getTransactionReceipt",
    [hash],
  );
  if (mined === null || mined.status !== "0x1") throw new Error(`transaction ${hash} failed`);
  return mined;
}

export async function codeAt(chain: LocalChain, address: Hex): Promise<Hex> {
  return await chain.rpc<Hex>("eth_getCode", [address, "latest"]);
}

/** A 32-byte salt nobody else in the run uses. */
export function freshSalt(): Hex {
  return keccak256(toHex(crypto.getRandomValues(new Uint8Array(32))));
}

// ---------------------------------------------------------------------------------------------
// An RPC in front of a chain that can fail on demand

export type ProxyMode =
  | "forward"
  /** Never answers; gives up only when the client does. */
  | "slow"
  /** An HTML error page with status 200. */
  | "html"
  /** 502 Bad Gateway. */
  | "http-error"
  /** eth_call results that are not hex. */
  | "not-hex"
  /** Answers with another request id. */
  | "wrong-id"
  /** eth_call's last word made 2 (neither no nor yes from the validator). */
  | "odd-word"
  /** eth_call answers with a JSON-RPC error the node made (rate limited), not a revert. */
  | "node-error"
  /** eth_call answers with a node error whose message mentions a revert: still the node's. */
  | "node-error-mentioning-revert";

export interface RpcProxy {
  /** The proxy's URL, with a made-up API key in its path that must never leak. */
  readonly url: string;
  /** eth_call and eth_chainId requests seen, counted whatever the mode. */
  readonly calls: { eth_call: number; eth_chainId: number };
  /** HTTP requests seen, whatever they held. */
  requests: number;
  mode: ProxyMode;
  /** The chain forwarded to; changed, the same URL answers from another chain (a failover). */
  target: string;
  /** Closes the listener (connections refused) until `up()`. */
  down(): Promise<void>;
  up(): void;
  close(): Promise<void>;
}

export const LEAK_CANARY = "apikey-7f3c9d1e2b";

export function startRpcProxy(target: string): RpcProxy {
  const port = freePort();
  let server: Deno.HttpServer | null = null;
  const proxy: RpcProxy = {
    url: `http://127.0.0.1:${port}/v1/${LEAK_CANARY}`,
    calls: { eth_call: 0, eth_chainId: 0 },
    requests: 0,
    mode: "forward",
    target,
    async down() {
      await server?.shutdown();
      server = null;
    },
    up() {
      server ??= Deno.serve({ hostname: "127.0.0.1", port, onListen() {} }, handle);
    },
    close: () => proxy.down(),
  };

  async function handle(request: Request): Promise<Response> {
    proxy.requests += 1;
    const text = await request.text();
    const call = JSON.parse(text) as { id: number; method: string };
    if (call.method === "eth_call" || call.method === "eth_chainId") proxy.calls[call.method] += 1;
    const answer = (body: unknown) =>
      Response.json({ jsonrpc: "2.0", id: call.id, ...body as object });
    switch (proxy.mode) {
      case "slow":
        await new Promise((resolve) => request.signal.addEventListener("abort", resolve));
        return new Response(null, { status: 504 });
      case "html":
        return new Response("<html><body>Service temporarily overloaded</body></html>", {
          headers: { "content-type": "text/html" },
        });
      case "http-error":
        return new Response("bad gateway", { status: 502 });
      case "not-hex":
        if (call.method === "eth_call") return answer({ result: "0xnot-hex" });
        break;
      case "wrong-id":
        return Response.json({ jsonrpc: "2.0", id: call.id + 1, result: "0x" });
      case "node-error":
        if (call.method === "eth_call") {
          return answer({ error: { code: -32005, message: "daily request limit exceeded" } });
        }
        break;
      case "node-error-mentioning-revert":
        if (call.method === "eth_call") {
          return answer({
            error: { code: -32603, message: "internal error: state reverted to an older block" },
          });
        }
        break;
    }
    const upstream = await fetch(proxy.target, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: text,
    });
    if (proxy.mode === "odd-word" && call.method === "eth_call") {
      const forwarded = await upstream.json() as { result?: string };
      const result = forwarded.result ?? "0x";
      return answer({ result: `${result.slice(0, -64)}${"0".repeat(63)}2` });
    }
    return new Response(await upstream.text(), {
      status: upstream.status,
      headers: { "content-type": "application/json" },
    });
  }

  proxy.up();
  return proxy;
}
