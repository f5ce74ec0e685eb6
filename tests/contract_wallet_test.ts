/**
 * Smart-contract wallets sign in (ERC-1271, ERC-6492), checked on a real EVM on loopback: two
 * ganache chains started for this file, wallets compiled here by solc and deployed, RPC proxies in
 * front of the chains that can go down, stall or lie. Each engine (PGlite; Postgres when
 * DATABASE_URL is set) runs every behaviour against the same chains.
 */
import assert from "node:assert/strict";
import {
  encodeDeployData,
  encodeFunctionData,
  hashMessage,
  type Hex,
  hexToBigInt,
  parseAbi,
  serializeErc6492Signature,
} from "viem";
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { bytesToHex } from "@noble/hashes/utils";
import { ConfigError, parseConfig } from "../functions/_shared/config/config.ts";
import { createServiceContext } from "../functions/_shared/context.ts";
import {
  createContractSignatureVerifier,
  MAX_CONTRACT_SIGNATURE_BYTES,
} from "../functions/_shared/chain/contract-signatures.ts";
import { ERC6492_VALIDATOR_INIT_CODE } from "../functions/_shared/chain/erc6492-validator.ts";
import { createChainRpc } from "../functions/_shared/chain/chain-rpc.ts";
import { ServiceError } from "../functions/_shared/http/errors.ts";
import { type LogFields, type Logger } from "../functions/_shared/http/log.ts";
import { silentLogger } from "./support/log.ts";
import { createLocalApp } from "../server/app.ts";
import {
  bearer,
  newWallet,
  startTestApp,
  TEST_ORIGIN,
  type TestApp,
  testEnv,
} from "./support/app.ts";
import { testEngines } from "./support/database.ts";
import {
  codeAt,
  type Compiled,
  compileTestWallets,
  compileValidator,
  deploy,
  deployAsFirstTransaction,
  freshSalt,
  jsonRpc,
  LEAK_CANARY,
  type LocalChain,
  type RpcProxy,
  startChain,
  startRpcProxy,
  transact,
} from "./support/evm.ts";

const CHAIN_A = 1337;
const CHAIN_B = 31337;
/** Allowed for sign-in, but no RPC is configured for it. */
const CHAIN_NO_RPC = 4242;

const WALLET_ABI = parseAbi([
  "constructor(address[] owners)",
  "function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)",
]);
const FACTORY_ABI = parseAbi([
  "function deploy(address owner, bytes32 salt) returns (address)",
  "function predict(address owner, bytes32 salt) view returns (address)",
]);
const VALIDATOR_ABI = parseAbi([
  "constructor(uint256 chainId, address signer, bytes32 hash, bytes signature)",
]);
const INITIALIZE_ABI = parseAbi(["function initialize(address newOwner)"]);

// ---------------------------------------------------------------------------------------------
// Without a chain

const VALIDATOR_INIT_CODE = `0x${bytesToHex(ERC6492_VALIDATOR_INIT_CODE)}` as Hex;

Deno.test("the committed ERC-6492 validator bytecode is exactly what its committed source compiles to", async () => {
  assert.equal(await compileValidator(), VALIDATOR_INIT_CODE);
});

Deno.test("the hand-written ABI encoding of the validator's call equals viem's", async () => {
  const chainIds = [1, 8453, 2 ** 32 + 7, Number.MAX_SAFE_INTEGER];
  // The call the verifier sends, caught before any RPC: a revert reads as the wallet's no.
  const sent: Uint8Array[] = [];
  const verifier = createContractSignatureVerifier({
    chainIds,
    call: (_chainId, call) => (sent.push(call.data), Promise.resolve({ reverted: true })),
    unavailable: () => new ServiceError("chain_unavailable", "unused"),
  });
  for (const [i, length] of [0, 1, 31, 32, 33, 65, 400, 1000].entries()) {
    const chainId = chainIds[i % chainIds.length];
    const hash = crypto.getRandomValues(new Uint8Array(32));
    const signature = crypto.getRandomValues(new Uint8Array(length));
    const signer = `0x${bytesToHex(crypto.getRandomValues(new Uint8Array(20)))}` as Hex;
    const signal = AbortSignal.timeout(1000);
    assert.equal(
      await verifier.verify({ chainId, address: signer, hash, signature, signal }),
      false,
    );
    assert.equal(
      `0x${bytesToHex(sent.at(-1)!)}`,
      encodeDeployData({
        abi: VALIDATOR_ABI,
        bytecode: VALIDATOR_INIT_CODE,
        args: [BigInt(chainId), signer, `0x${bytesToHex(hash)}`, `0x${bytesToHex(signature)}`],
      }),
    );
  }
  assert.equal(sent.length, 8);
});

Deno.test("CHAIN_RPC_URLS is read as <chainId>=<url> pairs, and a bad entry is named without its URL", () => {
  const config = parseConfig(testEnv({
    CHAIN_RPC_URLS: "1=https://eth.example/v2/key-one?x=1,y=2, 8453=http://127.0.0.1:8545",
  }));
  assert.deepEqual([...config.chainRpcUrls], [
    [1, "https://eth.example/v2/key-one?x=1,y=2"],
    [8453, "http://127.0.0.1:8545/"],
  ]);
  assert.equal(config.chainRpcTimeoutMs, 3000);
  assert.equal(parseConfig(testEnv()).chainRpcUrls.size, 0);
  const refusals: Record<string, string> = {
    "x=https://secret-one.example": "CHAIN_RPC_URLS entry 1 must be <chainId>=<http(s) URL>",
    "1=ftp://secret-two.example": "CHAIN_RPC_URLS entry 1 (chain 1) must be an http(s) URL",
    "1=https://a.example/secret-three,1=https://b.example/secret-three":
      "CHAIN_RPC_URLS entry 2 repeats chain 1",
  };
  for (const [value, problem] of Object.entries(refusals)) {
    assert.throws(() => parseConfig(testEnv({ CHAIN_RPC_URLS: value })), (error) => {
      assert.ok(error instanceof ConfigError);
      assert.ok(error.problems.includes(problem), error.message);
      assert.doesNotMatch(error.message, /secret/);
      return true;
    });
  }
  // Production: an http RPC could be answered by anyone on the path, and its answer admits.
  assert.throws(
    () =>
      parseConfig({
        ...testEnv({ CHAIN_RPC_URLS: "1=http://rpc.example/secret" }),
        APP_ENV: "production",
        DATABASE_URL: "postgres://u@h/db",
      }),
    (error) =>
      error instanceof ConfigError &&
      error.problems.includes("CHAIN_RPC_URLS entry 1 (chain 1) must be an https URL"),
  );
});

Deno.test("only a revert in the shape nodes send one is the contract's no; any other node error is an outage, one whose message mentions a revert included", async () => {
  const cases: [Record<string, unknown>, "no" | "outage"][] = [
    // geth, anvil, reth: code 3 with the revert data.
    [{ code: 3, message: "execution reverted: nope", data: `0x08c379a0${"00".repeat(68)}` }, "no"],
    [{ code: 3, message: "execution reverted", data: "0x" }, "no"],
    [{ code: 3, message: "execution reverted" }, "no"],
    // geth, for a revert without data.
    [{ code: -32000, message: "execution reverted" }, "no"],
    // ganache 7, as the chains in these tests answer.
    [
      { code: -32000, message: "VM Exception while processing transaction: revert", data: "0x" },
      "no",
    ],
    [{
      code: -32000,
      message: "VM Exception while processing transaction: revert nope",
      data: `0x08c379a0${"00".repeat(68)}`,
    }, "no"],
    // Out of gas: the validator gives a wallet 63/64 of the gas and copies one word of its answer,
    // so only a node's own cap can end the call this way.
    [{ code: -32000, message: "out of gas" }, "outage"],
    [{ code: -32000, message: "VM Exception while processing transaction: out of gas" }, "outage"],
    [{ code: -32005, message: "daily request limit exceeded" }, "outage"],
    [{ code: -32603, message: "internal error" }, "outage"],
    // A message that mentions a revert, in any other shape, is the node's.
    [{ code: -32603, message: "internal error: state reverted to an older block" }, "outage"],
    [{ code: -32000, message: "upstream failed; request reverted to the queue" }, "outage"],
    [{ code: -32000, message: "header not found, execution reverted" }, "outage"],
    [{ code: 429, message: "execution reverted" }, "outage"],
    [{ code: 3, message: "rate limited", data: "0x" }, "outage"],
    [{ code: 3, message: "execution reverted", data: "not hex" }, "outage"],
  ];
  for (const [error, expected] of cases) {
    const fakeFetch = async (_url: string | URL | Request, init?: RequestInit) => {
      const { id } = JSON.parse(String(init?.body));
      return await Promise.resolve(Response.json({ jsonrpc: "2.0", id, error }));
    };
    const rpc = createChainRpc(new Map([[1, "https://rpc.example/secret"]]), {
      log: silentLogger,
      fetch: fakeFetch as typeof fetch,
    });
    const call = rpc.call(
      1,
      { to: `0x${"11".repeat(20)}`, data: new Uint8Array(4) },
      new AbortController().signal,
    );
    const label = JSON.stringify(error);
    if (expected === "no") {
      assert.deepEqual(await call, { reverted: true }, label);
    } else {
      await assert.rejects(
        call,
        (e) => e instanceof ServiceError && e.code === "chain_unavailable",
        label,
      );
    }
  }
});

// ---------------------------------------------------------------------------------------------
// The local chains, shared by both engines' runs

interface World {
  readonly a: LocalChain;
  readonly b: LocalChain;
  readonly proxyA: RpcProxy;
  readonly proxyB: RpcProxy;
  readonly contracts: Record<string, Compiled>;
  readonly factory: Hex;
  readonly env: Record<string, string>;
  stop(): Promise<void>;
}

let worldPromise: Promise<World> | null = null;
let runsLeft = testEngines().length;

function world(): Promise<World> {
  worldPromise ??= (async () => {
    const contracts = await compileTestWallets();
    const [a, b] = await Promise.all([startChain(CHAIN_A), startChain(CHAIN_B)]);
    const proxyA = startRpcProxy(a.url);
    const proxyB = startRpcProxy(b.url);
    const factory = await deploy(a, contracts.WalletFactory.bytecode);
    return {
      a,
      b,
      proxyA,
      proxyB,
      contracts,
      factory,
      env: {
        ALLOWED_CHAIN_IDS: `${CHAIN_A},${CHAIN_B},${CHAIN_NO_RPC}`,
        CHAIN_RPC_URLS: `${CHAIN_A}=${proxyA.url},${CHAIN_B}=${proxyB.url}`,
        CHAIN_RPC_TIMEOUT_MS: "1000",
        RATE_LIMIT_RPC_PER_MINUTE: "100000",
        RATE_LIMIT_RPC_PER_ADDRESS_PER_MINUTE: "100000",
        RATE_LIMIT_RPC_PER_ADDRESS_PER_CLIENT_PER_MINUTE: "10000",
      },
      async stop() {
        await Promise.all([proxyA.close(), proxyB.close()]);
        await Promise.all([a.stop(), b.stop()]);
      },
    };
  })();
  return worldPromise;
}

// ---------------------------------------------------------------------------------------------
// Helpers

type Fetch = (path: string, init?: RequestInit) => Promise<Response>;

interface NonceAnswer {
  nonce: string;
  chainId: number;
  message: string;
}

function post(fetch: Fetch, path: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

async function nonceFor(
  fetch: Fetch,
  address: Hex,
  chainId: number,
  headers?: Record<string, string>,
): Promise<NonceAnswer> {
  const response = await post(fetch, "/api/auth/nonce", { address, chainId }, headers);
  const text = await response.text();
  assert.equal(response.status, 200, text);
  return JSON.parse(text);
}

const prove = (
  fetch: Fetch,
  message: string,
  signature: string,
  headers?: Record<string, string>,
) => post(fetch, "/api/auth/wallet-proof", { message, signature }, headers);

interface Session {
  access_token: string;
  user: { id: string; wallet_address: string };
}

async function signedIn(response: Response | Promise<Response>): Promise<Session> {
  const answered = await response;
  const text = await answered.text();
  assert.equal(answered.status, 200, text);
  return JSON.parse(text);
}

async function refused(response: Response | Promise<Response>, status: number, code: string) {
  const answered = await response;
  const text = await answered.text();
  assert.equal(answered.status, status, text);
  const body = JSON.parse(text);
  assert.equal(body.error.code, code, text);
  return { response: answered, body, text };
}

/** What an ERC-1271 owner wallet wants: the owner's signature of the EIP-191 hash itself. */
function ownerSignature(owner: PrivateKeyAccount, message: string): Promise<Hex> {
  return owner.sign({ hash: hashMessage(message) });
}

async function nonceUsedAt(app: TestApp, nonce: string): Promise<Date | null> {
  const [row] = await app.database.db.query<{ used_at: Date | null }>(
    "select used_at from public.auth_nonces where nonce = $1",
    [nonce],
  );
  return row.used_at;
}

function ownerWalletCode(w: World, owners: PrivateKeyAccount[]): Hex {
  return encodeDeployData({
    abi: WALLET_ABI,
    bytecode: w.contracts.OwnerWallet.bytecode,
    args: [owners.map((o) => o.address)],
  });
}

async function ownerWallet(w: World, chain: LocalChain, owners: PrivateKeyAccount[]) {
  return await deploy(chain, ownerWalletCode(w, owners));
}

/** One address, two wallets: `alice` owns it on chain A, `bob` on chain B. */
async function oneAddressTwoOwners(w: World, alice: PrivateKeyAccount, bob: PrivateKeyAccount) {
  const deployer = privateKeyToAccount(generatePrivateKey());
  const onA = await deployAsFirstTransaction(w.a, deployer, ownerWalletCode(w, [alice]));
  const onB = await deployAsFirstTransaction(w.b, deployer, ownerWalletCode(w, [bob]));
  assert.equal(onA, onB, "one address, two wallets with different owners");
  return onA;
}

/** A 65-byte signature no key made (its s is high): always the contract path. */
const GARBAGE_SIGNATURE = `0x${"ab".repeat(65)}`;

/** The test env with the RPC budgets at their defaults. */
function defaultRpcBudgets(env: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter(([name]) => !name.startsWith("RATE_LIMIT_RPC_")),
  );
}

let ipCounter = 0;
/** A client address of its own, so one behaviour's rate-limit buckets never meet another's. */
const ownIp = () => ({
  "x-forwarded-for": `10.77.${Math.floor(++ipCounter / 250)}.${ipCounter % 250}`,
});

async function awayFromWindowEdge(needSeconds = 15) {
  const intoMinute = (Date.now() / 1000) % 60;
  if (intoMinute > 60 - needSeconds) {
    await new Promise((resolve) => setTimeout(resolve, (60 - intoMinute) * 1000 + 500));
  }
}

interface CapturedLog {
  readonly lines: string[];
  readonly log: Logger;
}

function capturingLogger(): CapturedLog {
  const lines: string[] = [];
  const record = (level: string) => (event: string, fields?: LogFields) =>
    void lines.push(JSON.stringify({ level, event, ...fields }));
  return { lines, log: { info: record("info"), error: record("error") } };
}

/** Another app over the same database, with its own configuration, verifier state and logger. */
function appWith(app: TestApp, env: Record<string, string>, log: Logger): Fetch {
  const config = parseConfig(testEnv(env));
  const context = createServiceContext(config, app.database.db, log, {
    ownOrigins: [TEST_ORIGIN],
  });
  const { handler } = createLocalApp(context);
  return (path, init = {}) => {
    const request = new Request(new URL(path, TEST_ORIGIN), init);
    if (!request.headers.has("x-forwarded-for")) {
      request.headers.set("x-forwarded-for", "127.0.0.1");
    }
    return handler(request);
  };
}

/** Everything about a counterfactual (not yet deployed) one-owner wallet from the factory. */
async function counterfactual(w: World, owner: PrivateKeyAccount) {
  const salt = freshSalt();
  const deployCall = encodeFunctionData({
    abi: FACTORY_ABI,
    functionName: "deploy",
    args: [owner.address, salt],
  });
  const predicted = await jsonRpc<Hex>(w.a.url, "eth_call", [{
    to: w.factory,
    data: encodeFunctionData({
      abi: FACTORY_ABI,
      functionName: "predict",
      args: [owner.address, salt],
    }),
  }, "latest"]);
  const address = `0x${predicted.slice(26)}` as Hex;
  return {
    address,
    deployCall,
    wrap: (signature: Hex) =>
      serializeErc6492Signature({ address: w.factory, data: deployCall, signature }),
  };
}

async function usersAt(app: TestApp, address: string) {
  return await app.database.db.query<{ id: string; chain_id: string | number | null }>(
    "select id, chain_id from public.wallet_users where wallet_address = $1 order by chain_id",
    [address.toLowerCase()],
  );
}

// ---------------------------------------------------------------------------------------------
// The behaviours

type Behaviour = (app: TestApp, w: World) => Promise<void>;

const behaviours: Record<string, Behaviour> = {
  async "a key signs in as before and never reaches an RPC"(app, w) {
    const before = { ...w.proxyA.calls };
    const key = newWallet();
    const answer = await nonceFor(app.fetch, key.address, CHAIN_A);
    const session = await signedIn(
      prove(app.fetch, answer.message, await key.signMessage({ message: answer.message })),
    );
    assert.equal(session.user.wallet_address, key.address);
    assert.deepEqual(w.proxyA.calls, before);
    const [user] = await usersAt(app, key.address);
    assert.equal(user.chain_id, null, "a key is the same creator on every chain");
  },

  async "a one-owner ERC-1271 wallet signs in as its contract address, and again as the same creator"(
    app,
    w,
  ) {
    const owner = newWallet();
    const wallet = await ownerWallet(w, w.a, [owner]);
    const sessions: Session[] = [];
    for (let i = 0; i < 2; i++) {
      const answer = await nonceFor(app.fetch, wallet, CHAIN_A);
      sessions.push(
        await signedIn(
          prove(app.fetch, answer.message, await ownerSignature(owner, answer.message)),
        ),
      );
    }
    assert.equal(sessions[0].user.id, sessions[1].user.id);
    assert.equal(sessions[0].user.wallet_address.toLowerCase(), wallet.toLowerCase());
    assert.deepEqual(
      (await usersAt(app, wallet)).map((u) => [u.id, Number(u.chain_id)]),
      [[sessions[0].user.id, CHAIN_A]],
    );
    const secrets = await app.fetch("/api/secrets", { headers: bearer(sessions[1].access_token) });
    assert.equal(secrets.status, 200, "the session is a creator's like any other");
    await secrets.body?.cancel();
  },

  async "each owner of a two-owner wallet reaches the same creator"(app, w) {
    const owners = [newWallet(), newWallet()];
    const wallet = await ownerWallet(w, w.a, owners);
    const ids: string[] = [];
    for (const owner of owners) {
      const answer = await nonceFor(app.fetch, wallet, CHAIN_A);
      const session = await signedIn(
        prove(app.fetch, answer.message, await ownerSignature(owner, answer.message)),
      );
      ids.push(session.user.id);
    }
    assert.equal(ids[0], ids[1]);
  },

  async "a high-s signature the wallet accepts signs in: for a contract, the wallet decides"(
    app,
    w,
  ) {
    const owner = newWallet();
    const wallet = await ownerWallet(w, w.a, [owner]);
    const answer = await nonceFor(app.fetch, wallet, CHAIN_A);
    const low = await ownerSignature(owner, answer.message);
    const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
    const s = hexToBigInt(`0x${low.slice(66, 130)}`);
    const v = Number.parseInt(low.slice(130), 16);
    const high = `0x${low.slice(2, 66)}${(n - s).toString(16).padStart(64, "0")}${
      (v === 27 ? 28 : 27).toString(16)
    }`;
    await signedIn(prove(app.fetch, answer.message, high));
  },

  async "a signature by someone not an owner is signature_mismatch, and the nonce stays unspent"(
    app,
    w,
  ) {
    const owner = newWallet();
    const wallet = await ownerWallet(w, w.a, [owner]);
    const answer = await nonceFor(app.fetch, wallet, CHAIN_A);
    const calls = w.proxyA.calls.eth_call;
    await refused(
      prove(app.fetch, answer.message, await ownerSignature(newWallet(), answer.message)),
      401,
      "signature_mismatch",
    );
    assert.equal(w.proxyA.calls.eth_call, calls + 1, "the wallet itself was asked");
    assert.equal(await nonceUsedAt(app, answer.nonce), null);
    await signedIn(prove(app.fetch, answer.message, await ownerSignature(owner, answer.message)));
  },

  async "a wallet whose isValidSignature reverts is signature_mismatch, and the nonce stays unspent"(
    app,
    w,
  ) {
    const wallet = await deploy(w.a, w.contracts.RevertingWallet.bytecode);
    const answer = await nonceFor(app.fetch, wallet, CHAIN_A);
    await refused(
      prove(app.fetch, answer.message, await ownerSignature(newWallet(), answer.message)),
      401,
      "signature_mismatch",
    );
    assert.equal(await nonceUsedAt(app, answer.nonce), null);
  },

  async "a counterfactual wallet signs in through ERC-6492 before it exists, and after deployment as the same creator"(
    app,
    w,
  ) {
    const owner = newWallet();
    const wallet = await counterfactual(w, owner);
    assert.equal(await codeAt(w.a, wallet.address), "0x");

    const first = await nonceFor(app.fetch, wallet.address, CHAIN_A);
    // Someone else's inner signature in the same wrapper: the wallet-to-be says no.
    await refused(
      prove(
        app.fetch,
        first.message,
        wallet.wrap(await ownerSignature(newWallet(), first.message)),
      ),
      401,
      "signature_mismatch",
    );
    const before = await signedIn(
      prove(app.fetch, first.message, wallet.wrap(await ownerSignature(owner, first.message))),
    );
    assert.equal(before.user.wallet_address.toLowerCase(), wallet.address.toLowerCase());
    assert.equal(await codeAt(w.a, wallet.address), "0x", "checking deployed nothing");

    await transact(w.a, w.factory, wallet.deployCall);
    assert.notEqual(await codeAt(w.a, wallet.address), "0x");
    const plain = await nonceFor(app.fetch, wallet.address, CHAIN_A);
    const after = await signedIn(
      prove(app.fetch, plain.message, await ownerSignature(owner, plain.message)),
    );
    assert.equal(after.user.id, before.user.id);
    // A wallet that keeps wrapping its signatures after deployment is still the same creator.
    const wrapped = await nonceFor(app.fetch, wallet.address, CHAIN_A);
    const again = await signedIn(
      prove(app.fetch, wrapped.message, wallet.wrap(await ownerSignature(owner, wrapped.message))),
    );
    assert.equal(again.user.id, before.user.id);
  },

  async "a wallet is asked on the chain the message names: deployed on another, it is signature_mismatch"(
    app,
    w,
  ) {
    const owner = newWallet();
    const wallet = await ownerWallet(w, w.a, [owner]);
    const answer = await nonceFor(app.fetch, wallet, CHAIN_B);
    const asked = { a: w.proxyA.calls.eth_call, b: w.proxyB.calls.eth_call };
    await refused(
      prove(app.fetch, answer.message, await ownerSignature(owner, answer.message)),
      401,
      "signature_mismatch",
    );
    assert.equal(w.proxyA.calls.eth_call, asked.a, "chain A was not asked");
    assert.equal(w.proxyB.calls.eth_call, asked.b + 1, "chain B was");
    assert.equal(await nonceUsedAt(app, answer.nonce), null);
  },

  async "the same contract address on a second chain is a creator of its own"(app, w) {
    const [alice, bob] = [newWallet(), newWallet()];
    const onA = await oneAddressTwoOwners(w, alice, bob);

    const signInto = async (chainId: number, owner: PrivateKeyAccount) => {
      const answer = await nonceFor(app.fetch, onA, chainId);
      return prove(app.fetch, answer.message, await ownerSignature(owner, answer.message));
    };
    const aliceOnA = await signedIn(signInto(CHAIN_A, alice));
    const bobOnB = await signedIn(signInto(CHAIN_B, bob));
    assert.notEqual(bobOnB.user.id, aliceOnA.user.id);
    await refused(signInto(CHAIN_B, alice), 401, "signature_mismatch");
    await refused(signInto(CHAIN_A, bob), 401, "signature_mismatch");
    assert.equal((await signedIn(signInto(CHAIN_A, alice))).user.id, aliceOnA.user.id);
    assert.deepEqual(
      (await usersAt(app, onA)).map((u) => [u.id, Number(u.chain_id)]),
      [[aliceOnA.user.id, CHAIN_A], [bobOnB.user.id, CHAIN_B]],
    );
  },

  async "a contract-wallet proof replayed is refused before any RPC call"(app, w) {
    const owner = newWallet();
    const wallet = await ownerWallet(w, w.a, [owner]);
    const answer = await nonceFor(app.fetch, wallet, CHAIN_A);
    const signature = await ownerSignature(owner, answer.message);
    await signedIn(prove(app.fetch, answer.message, signature));
    const calls = w.proxyA.calls.eth_call;
    await refused(prove(app.fetch, answer.message, signature), 401, "nonce_used");
    assert.equal(w.proxyA.calls.eth_call, calls);
  },

  async "a nonce requested for an address and chain is spent only by a proof for them"(app, w) {
    const owner = newWallet();
    const wallet = await ownerWallet(w, w.a, [owner]);
    // Bound to the wallet on chain A, presented in a message for chain B: refused, no RPC call.
    const forA = await nonceFor(app.fetch, wallet, CHAIN_A);
    const onB = forA.message.replace(`Chain ID: ${CHAIN_A}`, `Chain ID: ${CHAIN_B}`);
    const calls = w.proxyB.calls.eth_call;
    await refused(
      prove(app.fetch, onB, await ownerSignature(owner, onB)),
      401,
      "nonce_mismatch",
    );
    assert.equal(w.proxyB.calls.eth_call, calls);
    // A key: its nonce asked for another address, or for another chain.
    const key = newWallet();
    const forOther = await nonceFor(app.fetch, newWallet().address, CHAIN_A);
    const mine = forOther.message.replace(/^0x[0-9a-fA-F]{40}$/m, key.address);
    await refused(
      prove(app.fetch, mine, await key.signMessage({ message: mine })),
      401,
      "nonce_mismatch",
    );
    const forKey = await nonceFor(app.fetch, key.address, CHAIN_A);
    const keyOnB = forKey.message.replace(`Chain ID: ${CHAIN_A}`, `Chain ID: ${CHAIN_B}`);
    await refused(
      prove(app.fetch, keyOnB, await key.signMessage({ message: keyOnB })),
      401,
      "nonce_mismatch",
    );
    // The proofs they were asked for still spend them.
    await signedIn(prove(app.fetch, forA.message, await ownerSignature(owner, forA.message)));
    await signedIn(
      prove(app.fetch, forKey.message, await key.signMessage({ message: forKey.message })),
    );
    // A nonce asked for without either is spent by any wallet on any allowed chain.
    const free = await post(app.fetch, "/api/auth/nonce", {}).then((r) => r.json());
    const text = forKey.message.replace(forKey.nonce, free.nonce)
      .replace(`Chain ID: ${CHAIN_A}`, `Chain ID: ${CHAIN_B}`);
    await signedIn(prove(app.fetch, text, await key.signMessage({ message: text })));
  },

  async "with no RPC for the message's chain, a contract wallet is signature_mismatch naming it; keys still sign in"(
    app,
    w,
  ) {
    const owner = newWallet();
    const wallet = await ownerWallet(w, w.a, [owner]);
    const answer = await nonceFor(app.fetch, wallet, CHAIN_NO_RPC);
    const { body } = await refused(
      prove(app.fetch, answer.message, await ownerSignature(owner, answer.message)),
      401,
      "signature_mismatch",
    );
    assert.match(body.error.message, new RegExp(`need an RPC for chain ${CHAIN_NO_RPC}`));
    const key = newWallet();
    const forKey = await nonceFor(app.fetch, key.address, CHAIN_NO_RPC);
    await signedIn(
      prove(app.fetch, forKey.message, await key.signMessage({ message: forKey.message })),
    );
  },

  async "a 16 KB signature is put to the wallet; a longer one is refused unread"(app, w) {
    const owner = newWallet();
    const wallet = await ownerWallet(w, w.a, [owner]);
    const answer = await nonceFor(app.fetch, wallet, CHAIN_A);
    const calls = w.proxyA.calls.eth_call;
    const longest = `0x${"ab".repeat(MAX_CONTRACT_SIGNATURE_BYTES)}`;
    await refused(prove(app.fetch, answer.message, longest), 401, "signature_mismatch");
    assert.equal(w.proxyA.calls.eth_call, calls + 1);
    await refused(prove(app.fetch, answer.message, `${longest}ab`), 400, "invalid_request");
    assert.equal(w.proxyA.calls.eth_call, calls + 1);
    await signedIn(prove(app.fetch, answer.message, await ownerSignature(owner, answer.message)));
  },

  async "the RPC down: 503 chain_unavailable with Retry-After, the nonce unspent, and the same proof signs in once it is back"(
    app,
    w,
  ) {
    const owner = newWallet();
    const wallet = await ownerWallet(w, w.a, [owner]);
    const answer = await nonceFor(app.fetch, wallet, CHAIN_A);
    const signature = await ownerSignature(owner, answer.message);
    await w.proxyA.down();
    try {
      const { response, body, text } = await refused(
        prove(app.fetch, answer.message, signature),
        503,
        "chain_unavailable",
      );
      assert.equal(response.headers.get("retry-after"), "5");
      assert.equal(body.error.retryAfterSeconds, 5);
      assert.equal(body.error.chainId, CHAIN_A);
      assert.ok(!text.includes(LEAK_CANARY) && !text.includes(new URL(w.proxyA.url).host));
    } finally {
      w.proxyA.up();
    }
    assert.equal(await nonceUsedAt(app, answer.nonce), null);
    await signedIn(prove(app.fetch, answer.message, signature));
  },

  async "the RPC slow: past the deadline it is 503, never a pass, and the nonce is kept"(app, w) {
    const owner = newWallet();
    const wallet = await ownerWallet(w, w.a, [owner]);
    const answer = await nonceFor(app.fetch, wallet, CHAIN_A);
    const signature = await ownerSignature(owner, answer.message);
    w.proxyA.mode = "slow";
    try {
      await refused(prove(app.fetch, answer.message, signature), 503, "chain_unavailable");
    } finally {
      w.proxyA.mode = "forward";
    }
    assert.equal(await nonceUsedAt(app, answer.nonce), null);
    await signedIn(prove(app.fetch, answer.message, signature));
  },

  async "an RPC that answers garbage or another chain never lets a proof through, and its URL is never logged or answered"(
    app,
    w,
  ) {
    const owner = newWallet();
    const wallet = await ownerWallet(w, w.a, [owner]);
    const later = await counterfactual(w, owner);
    const captured = capturingLogger();
    const answers: string[] = [];
    const cases: [RpcProxy["mode"] | "another-chain", Hex, "plain" | "wrapped"][] = [
      ["html", wallet, "plain"],
      ["http-error", wallet, "plain"],
      ["not-hex", wallet, "plain"],
      ["wrong-id", wallet, "plain"],
      ["node-error", wallet, "plain"],
      ["node-error-mentioning-revert", wallet, "plain"],
      ["odd-word", later.address, "wrapped"],
      ["odd-word", wallet, "plain"],
      ["another-chain", wallet, "plain"],
    ];
    try {
      for (const [mode, address, kind] of cases) {
        const fetch = appWith(app, w.env, captured.log);
        w.proxyA.mode = mode === "another-chain" ? "forward" : mode;
        w.proxyA.target = mode === "another-chain" ? w.b.url : w.a.url;
        const answer = await nonceFor(fetch, address, CHAIN_A);
        const inner = await ownerSignature(owner, answer.message);
        const { text } = await refused(
          prove(fetch, answer.message, kind === "wrapped" ? later.wrap(inner) : inner),
          503,
          "chain_unavailable",
        );
        answers.push(text);
        assert.equal(await nonceUsedAt(app, answer.nonce), null, mode);
      }
    } finally {
      w.proxyA.mode = "forward";
      w.proxyA.target = w.a.url;
    }
    const reasons = captured.lines.map((line) => JSON.parse(line))
      .filter((line) => line.event === "chain_rpc_failed").map((line) => line.reason);
    assert.deepEqual(reasons, [
      "malformed_answer",
      "http_502",
      "malformed_answer",
      "malformed_answer",
      "rpc_error",
      "rpc_error",
      "malformed_answer",
      "malformed_answer",
      "chain_mismatch",
    ]);
    const host = new URL(w.proxyA.url).host;
    for (const text of [...captured.lines, ...answers]) {
      assert.ok(!text.includes(LEAK_CANARY) && !text.includes(host), text);
    }
  },

  async "an RPC that fails over to another chain is caught in the same call: 503, never that chain's owner signed in"(
    app,
    w,
  ) {
    const [alice, bob] = [newWallet(), newWallet()];
    const address = await oneAddressTwoOwners(w, alice, bob);
    const proxy = startRpcProxy(w.a.url);
    const captured = capturingLogger();
    const fetch = appWith(
      app,
      { ...w.env, CHAIN_RPC_URLS: `${CHAIN_A}=${proxy.url}` },
      captured.log,
    );
    try {
      const first = await nonceFor(fetch, address, CHAIN_A);
      const alices = await signedIn(
        prove(fetch, first.message, await ownerSignature(alice, first.message)),
      );
      proxy.target = w.b.url; // the same URL now answers from chain B
      const answer = await nonceFor(fetch, address, CHAIN_A);
      await refused(
        prove(fetch, answer.message, await ownerSignature(bob, answer.message)),
        503,
        "chain_unavailable",
      );
      await refused(
        prove(fetch, answer.message, await ownerSignature(alice, answer.message)),
        503,
        "chain_unavailable",
      );
      assert.equal(await nonceUsedAt(app, answer.nonce), null);
      const reasons = captured.lines.map((line) => JSON.parse(line))
        .filter((line) => line.event === "chain_rpc_failed").map((line) => line.reason);
      assert.deepEqual(reasons, ["chain_mismatch", "chain_mismatch"]);
      proxy.target = w.a.url;
      const again = await signedIn(
        prove(fetch, answer.message, await ownerSignature(alice, answer.message)),
      );
      assert.equal(again.user.id, alices.user.id);
    } finally {
      await proxy.close();
    }
  },

  async "every check is one request to the RPC, a new instance's first included"(app, w) {
    const owner = newWallet();
    const wallet = await ownerWallet(w, w.a, [owner]);
    const later = await counterfactual(w, owner);
    const proxy = startRpcProxy(w.a.url);
    const fetch = appWith(
      app,
      { ...w.env, CHAIN_RPC_URLS: `${CHAIN_A}=${proxy.url}` },
      capturingLogger().log,
    );
    try {
      for (const [address, wrap] of [[wallet, false], [wallet, false], [later.address, true]]) {
        const answer = await nonceFor(fetch, address as Hex, CHAIN_A);
        const inner = await ownerSignature(owner, answer.message);
        const before = proxy.requests;
        await signedIn(prove(fetch, answer.message, wrap ? later.wrap(inner) : inner));
        assert.equal(proxy.requests, before + 1);
      }
      assert.equal(proxy.calls.eth_chainId, 0, "the chain is proven by the eth_call itself");
    } finally {
      await proxy.close();
    }
  },

  async "a deployed wallet's ERC-6492 signature runs no prepare call: an uninitialized wallet cannot be taken over inside the check"(
    app,
    w,
  ) {
    const wallet = await deploy(w.a, w.contracts.UninitializedWallet.bytecode);
    const initialize = (owner: PrivateKeyAccount) =>
      encodeFunctionData({
        abi: INITIALIZE_ABI,
        functionName: "initialize",
        args: [owner.address],
      });
    const attacker = newWallet();
    const answer = await nonceFor(app.fetch, wallet, CHAIN_A);
    const takeover = serializeErc6492Signature({
      address: wallet,
      data: initialize(attacker),
      signature: await ownerSignature(attacker, answer.message),
    });
    await refused(prove(app.fetch, answer.message, takeover), 401, "signature_mismatch");
    assert.equal(await nonceUsedAt(app, answer.nonce), null);
    // Once its owner is set on chain, the wallet's own signature signs in, wrapped or not.
    const owner = newWallet();
    await transact(w.a, wallet, initialize(owner));
    await signedIn(prove(app.fetch, answer.message, await ownerSignature(owner, answer.message)));
    const next = await nonceFor(app.fetch, wallet, CHAIN_A);
    await signedIn(
      prove(
        app.fetch,
        next.message,
        serializeErc6492Signature({
          address: wallet,
          data: initialize(attacker),
          signature: await ownerSignature(owner, next.message),
        }),
      ),
    );
  },

  async "a nonce is put to the chain at most three times; the fourth proof with it is nonce_used, with no RPC call"(
    app,
    w,
  ) {
    const owner = newWallet();
    const wallet = await ownerWallet(w, w.a, [owner]);
    const answer = await nonceFor(app.fetch, wallet, CHAIN_A);
    const calls = w.proxyA.calls.eth_call;
    for (let i = 0; i < 3; i++) {
      await refused(prove(app.fetch, answer.message, GARBAGE_SIGNATURE), 401, "signature_mismatch");
    }
    assert.equal(w.proxyA.calls.eth_call, calls + 3);
    const { body } = await refused(
      prove(app.fetch, answer.message, await ownerSignature(owner, answer.message)),
      401,
      "nonce_used",
    );
    assert.match(body.error.message, /request a new one/);
    assert.equal(w.proxyA.calls.eth_call, calls + 3);
    const fresh = await nonceFor(app.fetch, wallet, CHAIN_A);
    await signedIn(prove(app.fetch, fresh.message, await ownerSignature(owner, fresh.message)));
  },

  async "one client spending its whole budget on a wallet, with garbage proofs and one reused nonce, does not keep the owner's valid proof out"(
    app,
    w,
  ) {
    await awayFromWindowEdge();
    const fetch = appWith(app, defaultRpcBudgets(w.env), capturingLogger().log);
    const owner = newWallet();
    const wallet = await ownerWallet(w, w.a, [owner]);
    const stranger = ownIp();
    const calls = w.proxyA.calls.eth_call;
    let answer = await nonceFor(fetch, wallet, CHAIN_A, stranger);
    const codes: string[] = [];
    for (let i = 0; i < 40 && codes.at(-1) !== "rate_limited"; i++) {
      const response = await prove(fetch, answer.message, GARBAGE_SIGNATURE, stranger);
      const { error } = await response.json();
      codes.push(error.code);
      // The reused nonce refused: the stranger takes another and goes on.
      if (error.code === "nonce_used") answer = await nonceFor(fetch, wallet, CHAIN_A, stranger);
    }
    assert.equal(codes.at(-1), "rate_limited", "the stranger's budget is spent");
    const own = ownIp();
    const mine = await nonceFor(fetch, wallet, CHAIN_A, own);
    await signedIn(prove(fetch, mine.message, await ownerSignature(owner, mine.message), own));
    assert.deepEqual(codes, [
      ...Array(3).fill("signature_mismatch"),
      "nonce_used",
      ...Array(2).fill("signature_mismatch"),
      "rate_limited",
    ]);
    assert.equal(w.proxyA.calls.eth_call, calls + 6, "the stranger's five checks, the owner's one");
  },

  async "RPC checks are budgeted per wallet and client IP: over it, 429 for that pair only"(
    app,
    w,
  ) {
    await awayFromWindowEdge();
    const fetch = appWith(
      app,
      { ...w.env, RATE_LIMIT_RPC_PER_ADDRESS_PER_CLIENT_PER_MINUTE: "2" },
      capturingLogger().log,
    );
    const owner = newWallet();
    const wallet = await ownerWallet(w, w.a, [owner]);
    const ip = ownIp();
    for (let i = 0; i < 2; i++) {
      const answer = await nonceFor(fetch, wallet, CHAIN_A);
      await refused(prove(fetch, answer.message, GARBAGE_SIGNATURE, ip), 401, "signature_mismatch");
    }
    const calls = w.proxyA.calls.eth_call;
    const answer = await nonceFor(fetch, wallet, CHAIN_A);
    const signature = await ownerSignature(owner, answer.message);
    await refused(prove(fetch, answer.message, signature, ip), 429, "rate_limited");
    assert.equal(w.proxyA.calls.eth_call, calls, "no RPC call over the budget");
    assert.equal(await nonceUsedAt(app, answer.nonce), null);
    // The same wallet from another client, and another wallet from this one, are not limited.
    await signedIn(prove(fetch, answer.message, signature, ownIp()));
    const other = await ownerWallet(w, w.a, [owner]);
    const forOther = await nonceFor(fetch, other, CHAIN_A);
    await signedIn(
      prove(fetch, forOther.message, await ownerSignature(owner, forOther.message), ip),
    );
  },

  async "RPC checks are budgeted per client IP: over it, 429 before any call, the nonce unspent"(
    app,
    w,
  ) {
    await awayFromWindowEdge();
    const fetch = appWith(app, { ...w.env, RATE_LIMIT_RPC_PER_MINUTE: "2" }, capturingLogger().log);
    const owner = newWallet();
    const wallet = await ownerWallet(w, w.a, [owner]);
    const ip = ownIp();
    for (let i = 0; i < 2; i++) {
      const answer = await nonceFor(fetch, wallet, CHAIN_A);
      await refused(
        prove(fetch, answer.message, await ownerSignature(newWallet(), answer.message), ip),
        401,
        "signature_mismatch",
      );
    }
    const calls = w.proxyA.calls.eth_call;
    const answer = await nonceFor(fetch, wallet, CHAIN_A);
    const signature = await ownerSignature(owner, answer.message);
    const { response } = await refused(
      prove(fetch, answer.message, signature, ip),
      429,
      "rate_limited",
    );
    assert.ok(Number(response.headers.get("retry-after")) >= 1);
    assert.equal(w.proxyA.calls.eth_call, calls, "no RPC call over the budget");
    assert.equal(await nonceUsedAt(app, answer.nonce), null);
    // Another client is not limited, and a key never spends the budget.
    await signedIn(prove(fetch, answer.message, signature, ownIp()));
    const key = newWallet();
    const forKey = await nonceFor(fetch, key.address, CHAIN_A);
    await signedIn(
      prove(fetch, forKey.message, await key.signMessage({ message: forKey.message }), ip),
    );
  },

  async "RPC checks are budgeted per address and chain, every client together: over it, 429 from any client"(
    app,
    w,
  ) {
    await awayFromWindowEdge();
    // The lowest cap allowed: ten clients' shares of one check each.
    const fetch = appWith(
      app,
      {
        ...w.env,
        RATE_LIMIT_RPC_PER_ADDRESS_PER_MINUTE: "10",
        RATE_LIMIT_RPC_PER_ADDRESS_PER_CLIENT_PER_MINUTE: "1",
      },
      capturingLogger().log,
    );
    const owner = newWallet();
    const wallet = await ownerWallet(w, w.a, [owner]);
    for (let i = 0; i < 10; i++) {
      const answer = await nonceFor(fetch, wallet, CHAIN_A);
      await refused(
        prove(fetch, answer.message, await ownerSignature(newWallet(), answer.message), ownIp()),
        401,
        "signature_mismatch",
      );
    }
    const calls = w.proxyA.calls.eth_call;
    const answer = await nonceFor(fetch, wallet, CHAIN_A);
    await refused(
      prove(fetch, answer.message, await ownerSignature(owner, answer.message), ownIp()),
      429,
      "rate_limited",
    );
    assert.equal(w.proxyA.calls.eth_call, calls);
    // The same address on another chain (no wallet there) is asked, and says no.
    const onB = await nonceFor(fetch, wallet, CHAIN_B);
    await refused(
      prove(fetch, onB.message, await ownerSignature(owner, onB.message), ownIp()),
      401,
      "signature_mismatch",
    );
    // Another wallet is not affected.
    const other = await ownerWallet(w, w.a, [owner]);
    const forOther = await nonceFor(fetch, other, CHAIN_A);
    await signedIn(
      prove(fetch, forOther.message, await ownerSignature(owner, forOther.message), ownIp()),
    );
  },

  async "a contract wallet's proof budget is its chain's own: the same address's wallet on another chain using all of it leaves the owner signing in"(
    app,
    w,
  ) {
    await awayFromWindowEdge(30);
    const limit = 10;
    const fetch = appWith(
      app,
      { ...w.env, RATE_LIMIT_PROOF_PER_ADDRESS_PER_MINUTE: String(limit) },
      capturingLogger().log,
    );
    const [alice, bob] = [newWallet(), newWallet()];
    const address = await oneAddressTwoOwners(w, alice, bob);
    const signInto = async (chainId: number, owner: PrivateKeyAccount) => {
      const answer = await nonceFor(fetch, address, chainId);
      return prove(fetch, answer.message, await ownerSignature(owner, answer.message), ownIp());
    };
    for (let i = 0; i < limit; i++) await signedIn(signInto(CHAIN_B, bob));
    await refused(signInto(CHAIN_B, bob), 429, "rate_limited");
    const aliceOnA = await signedIn(signInto(CHAIN_A, alice));
    assert.equal(aliceOnA.user.wallet_address.toLowerCase(), address.toLowerCase());
  },

  async "a key's proof budget is one on every chain, as the key is one creator on every chain"(
    app,
    w,
  ) {
    await awayFromWindowEdge(30);
    const limit = 4;
    const fetch = appWith(
      app,
      { ...w.env, RATE_LIMIT_PROOF_PER_ADDRESS_PER_MINUTE: String(limit) },
      capturingLogger().log,
    );
    const key = newWallet();
    const signInto = async (chainId: number) => {
      const answer = await nonceFor(fetch, key.address, chainId);
      return prove(fetch, answer.message, await key.signMessage({ message: answer.message }));
    };
    for (let i = 0; i < limit; i++) await signedIn(signInto(i % 2 === 0 ? CHAIN_A : CHAIN_B));
    await refused(signInto(CHAIN_A), 429, "rate_limited");
    await refused(signInto(CHAIN_B), 429, "rate_limited");
  },

  "the chains sign-in allows without an RPC are named at start"(app, w) {
    const captured = capturingLogger();
    appWith(app, w.env, captured.log);
    const named = captured.lines.map((line) => JSON.parse(line))
      .filter((line) => line.event === "contract_wallets_unavailable");
    assert.equal(named.length, 1);
    assert.equal(named[0].chain_ids, String(CHAIN_NO_RPC));
    assert.equal(named[0].rpc_chain_ids, `${CHAIN_A},${CHAIN_B}`);
    assert.ok(!captured.lines.join("\n").includes(LEAK_CANARY));
    return Promise.resolve();
  },
};

for (const engine of testEngines()) {
  Deno.test({
    name: `contract-wallet sign-in on local chains [${engine}]`,
    // PGlite, postgres.js, the chains' processes and the proxies stay open between steps.
    sanitizeOps: false,
    sanitizeResources: false,
    async fn(t) {
      const w = await world();
      const app = await startTestApp(engine, w.env);
      try {
        for (const [name, behaviour] of Object.entries(behaviours)) {
          await t.step(name, () => behaviour(app, w));
        }
      } finally {
        await app.close();
        if (--runsLeft === 0) await w.stop();
      }
    },
  });
}
