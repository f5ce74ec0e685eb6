/**
 * `deno task bench`: how fast the service is, measured side by side in one run, loopback only.
 *
 * For each engine (ENGINES below: real PostgreSQL when DATABASE_URL is set or one answers on
 * 127.0.0.1:5432, and embedded PGlite), the local server (server/main.ts) runs as its own process
 * on a free loopback port on a fresh database, with exactly the environment meant for it (nothing
 * inherited from this process but PATH, HOME and Deno's own: bench/support.ts childEnv), and is
 * checked to run on that engine (the `storage` GET /api/secrets reports) before anything is
 * measured; a mismatch aborts the bench. A closed-loop client then drives each route at a fixed
 * concurrency and at concurrency 1: nonce issue, the full wallet-proof, GET /api/secrets (seven
 * stored secrets: there are seven types), PUT, and reveal of all seven. Beside them, in the same
 * run, their floors: a bare Deno.serve handler doing the one indexed query each route needs (a
 * read of the creator's rows, a read of its ciphertexts, one upsert) through the same driver
 * (bench/bare-server.ts, checked the same way), each measured right after its route where both
 * processes can run at once (PostgreSQL; PGlite allows one process per data directory, so there
 * all routes run first, then all floors), and in-process bare secp256k1 recovery of one
 * signature (viem) beside the peers' sign-in checks (the `siwe` package, viem's
 * verifySiweMessage). Then cold start per function and latency growth from 1 to 100,000 creators.
 *
 * The whole suite runs BENCH_RUNS times; every ratio is taken within its run, and the summary
 * gives each figure's median with its min–max. Everything goes to bench/results/latest.json;
 * `deno task bench:report` turns that into bench/README.md and the README's tables.
 *
 * Knobs: BENCH_RUNS (3), BENCH_CONCURRENCY (8), BENCH_DURATION_MS (3000), BENCH_SINGLE_MS (1500),
 * BENCH_GROWTH ("1,1000,100000"; "" for none), BENCH_ENGINES ("postgres,pglite"),
 * BENCH_OUT (bench/results/latest.json).
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
import { SECRET_TYPES } from "../functions/_shared/vault/secret-types.ts";
import { runLoad, timeLoop } from "./http-load.ts";
import {
  assertStorage,
  type BenchDatabase,
  childEnv,
  cpuMs,
  createDatabase,
  findPostgres,
  freePort,
  newAccount,
  preparedProof,
  putSecret,
  seedCreatorsSql,
  serverEnv,
  type ServerProcess,
  type Session,
  signIn,
  startProcess,
} from "./support.ts";
import { startEdgeShape } from "../tests/support/edge.ts";
import { findPgBouncer, type PgBouncer, startPgBouncer } from "../tests/support/pgbouncer.ts";

const RUNS = Number(Deno.env.get("BENCH_RUNS") ?? 3);
const CONCURRENCY = Number(Deno.env.get("BENCH_CONCURRENCY") ?? 8);
const DURATION_MS = Number(Deno.env.get("BENCH_DURATION_MS") ?? 3000);
const WARMUP_MS = 500;
const GROWTH = (Deno.env.get("BENCH_GROWTH") ?? "1,1000,100000").split(",").filter((x) => x)
  .map(Number);
const GROWTH_MS = 2000;
/** Each route also runs this long at concurrency 1, for its unqueued latency. */
const SINGLE_MS = Number(Deno.env.get("BENCH_SINGLE_MS") ?? 1500);
const OUT = Deno.env.get("BENCH_OUT") ?? "bench/results/latest.json";
const ROOT = new URL("../", import.meta.url);

const startedAt = performance.now();
const log = (line: string) =>
  console.error(`[${((performance.now() - startedAt) / 1000).toFixed(1).padStart(6)} s] ${line}`);

// ---------------------------------------------------------------------------------------------
// Engines: to add one (the deployed shape: functions as their own processes behind a pooler),
// add an entry to ENGINES; everything below runs per entry.

export interface BenchEngine {
  readonly name: string;
  /** The `storage` its servers must report (GET /api/secrets; the floor's GET /ready). */
  readonly storage: string;
  /** Held to bench/targets.ts (PGlite is reported, not targeted). */
  readonly targeted: boolean;
  /** One process at a time per database (PGlite's data directory). */
  readonly exclusive: boolean;
  /** null when it can run here, else why it is skipped. */
  available(): Promise<string | null>;
  /** A new, migrated database holding nothing from an earlier run. */
  createDatabase(): Promise<BenchDatabase>;
  /** The service under test; `keys` are the keys and limits every process of a run shares. */
  startServer(db: BenchDatabase, keys: Record<string, string>): Promise<ServerProcess>;
  /** The floor server (bench/bare-server.ts): the same driver and settings as the service. */
  startFloor(db: BenchDatabase, keys: Record<string, string>): Promise<ServerProcess>;
  /**
   * The environment of one function started alone (cold start); `serverUrl` is for the proxy.
   * null: the functions do not run on this engine (PGlite belongs to the local server alone).
   */
  functionEnv(
    db: BenchDatabase,
    keys: Record<string, string>,
    serverUrl: string,
  ): Record<string, string> | null;
}

let postgresAdminUrl: string | null = null;

/** The local server (server/main.ts) and the floor, on one database given by `db.env`. */
function localEngine(
  name: string,
  options: Pick<BenchEngine, "storage" | "targeted" | "exclusive" | "available">,
  create: () => Promise<BenchDatabase>,
): BenchEngine {
  return {
    name,
    ...options,
    createDatabase: create,
    startServer: (db, keys) => startProcess("server/main.ts", { ...keys, ...db.env }),
    startFloor: (db, keys) =>
      startProcess("bench/bare-server.ts", { ...keys, ...db.env }, "/ready"),
    functionEnv: (db, keys) =>
      db.engine === "pglite" ? null : {
        ...keys,
        ...db.env,
        ALLOWED_ORIGINS: "http://127.0.0.1:54321",
      },
  };
}

/**
 * The deployed shape (issue 12): the `api` function as its own process with the edge runtime's
 * permissions only (`--allow-net --allow-env`, tests/support/edge.ts), on Postgres through
 * PgBouncer in transaction mode; its floor is the bare server through the same pooler, with the
 * same driver settings (a pooler URL: no prepared statements). Supabase's own gateway is not here.
 */
function deployedEngine(): BenchEngine {
  const poolers = new Map<BenchDatabase, PgBouncer>();
  return {
    name: "deployed",
    storage: "postgres:public.user_secrets",
    targeted: true,
    exclusive: false,
    async available() {
      postgresAdminUrl ??= await findPostgres();
      if (postgresAdminUrl === null) return "no Postgres to put a pooler in front of";
      const lookup = await findPgBouncer(false);
      return "missing" in lookup ? lookup.missing : null;
    },
    async createDatabase() {
      const direct = await createDatabase("postgres", postgresAdminUrl);
      const lookup = await findPgBouncer(false);
      if (!("found" in lookup)) throw new Error(lookup.missing);
      const pooler = await startPgBouncer(lookup.found, {
        poolSize: DEPLOYED_POOL_SIZE,
        upstreamUrl: postgresAdminUrl!,
      });
      const name = new URL(direct.url!).pathname.slice(1);
      const pooled: BenchDatabase = {
        ...direct,
        env: { DATABASE_URL: pooler.urlFor(name), DATABASE_MAX_CONNECTIONS: "8" },
        async drop() {
          await pooler.stop();
          await direct.drop();
        },
      };
      poolers.set(pooled, pooler);
      return pooled;
    },
    async startServer(db, keys) {
      const env = {
        ...keys,
        ...db.env,
        SUPABASE_URL: "https://bench.supabase.co",
        SUPABASE_DB_URL: db.url!,
        ALLOWED_ORIGINS: "http://127.0.0.1:54321",
      };
      const edge = await startEdgeShape({
        env,
        functions: ["api"],
        instancesPerFunction: 1,
      });
      const url = `http://127.0.0.1:${edge.instances.api[0]}`;
      await assertStorage("the deployed api function", url, "postgres:public.user_secrets");
      return { url, env, pid: edge.pids[0], pids: edge.pids, stop: () => edge.stop() };
    },
    startFloor: (db, keys) =>
      startProcess("bench/bare-server.ts", { ...keys, ...db.env }, "/ready"),
    functionEnv: (db, keys) => ({ ...keys, ...db.env, ALLOWED_ORIGINS: "http://127.0.0.1:54321" }),
  };
}

/** PgBouncer's server connections per database in the deployed shape: fewer than the clients. */
const DEPLOYED_POOL_SIZE = 6;

const ENGINES: readonly BenchEngine[] = [
  localEngine(
    "postgres",
    {
      storage: "postgres:public.user_secrets",
      targeted: true,
      exclusive: false,
      async available() {
        postgresAdminUrl = await findPostgres();
        return postgresAdminUrl === null
          ? "no DATABASE_URL and nothing answers on 127.0.0.1:5432"
          : null;
      },
    },
    () => createDatabase("postgres", postgresAdminUrl),
  ),
  localEngine(
    "pglite",
    {
      storage: "pglite:public.user_secrets",
      targeted: false,
      exclusive: true,
      available: () => Promise.resolve(null),
    },
    () => createDatabase("pglite", null),
  ),
  deployedEngine(),
];

// ---------------------------------------------------------------------------------------------
// What one run records

interface Row {
  /** Stable across runs: `<engine>/<measure key>`. */
  id: string;
  engine: string;
  measure: string;
  concurrency: number;
  requests: number;
  errors: number;
  p50Ms: number;
  p99Ms: number;
  rps: number;
  baseline: string | null;
  baselineP50Ms: number | null;
  /** p50 / baseline p50, both from this run. */
  ratio: number | null;
  /** The same at concurrency 1: unqueued latency, and its ratio to the floor at concurrency 1. */
  p50At1Ms?: number;
  ratioAt1?: number;
  /** CPU the server process spent per request at the fixed concurrency (robust to a busy machine). */
  cpuUsPerRequest?: number | null;
}

interface ColdStart {
  engine: string;
  function: string;
  firstResponseMs: number;
  importMs: number | null;
  overImportMs: number | null;
}

interface Growth {
  engine: string;
  creators: number;
  measure: string;
  p50Ms: number;
  p99Ms: number;
  rps: number;
}

interface RunResult {
  run: number;
  rows: Row[];
  coldStart: ColdStart[];
  growth: Growth[];
}

/** Sums CPU over the processes that serve a request (one for the local server). */
async function serverCpuMs(server: ServerProcess): Promise<number | null> {
  let total = 0;
  for (const pid of server.pids ?? [server.pid]) {
    const ms = await cpuMs(pid);
    if (ms === null) return null;
    total += ms;
  }
  return total;
}

// ---------------------------------------------------------------------------------------------
// In-process: signature recovery, and the sign-in checks of the peers and ours

async function inProcess(result: RunResult) {
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
    timed: Awaited<ReturnType<typeof timeLoop>>,
    baseline: [string, number] | null,
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
    baselineP50Ms: baseline?.[1] ?? null,
    ratio: baseline ? timed.p50Ms / baseline[1] : null,
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

  result.rows.push(
    row("recovery", "bare secp256k1 recovery (viem recoverMessageAddress)", recovery, null),
    row("own-recovery", "our secp256k1 recovery (libsecp256k1, WebAssembly)", ownRecovery, [
      "viem recovery",
      recovery.p50Ms,
    ]),
    row("ours", "our message check + signature verify (siwe.ts)", ours, [
      "viem recovery",
      recovery.p50Ms,
    ]),
    row("siwe", "peer: siwe package verify (SiweMessage.verify, ethers)", siwe, [
      "ours",
      ours.p50Ms,
    ]),
    row("viem-siwe", "peer: viem verifySiweMessage (EOA, no RPC)", viemSiwe, [
      "ours",
      ours.p50Ms,
    ]),
  );
  return {
    /** The floor's recovery timed again now, beside the route it is the floor of. */
    recoveryNow: async () =>
      (await timeLoop(() => recoverMessageAddress({ message, signature }), 500)).p50Ms,
  };
}

// ---------------------------------------------------------------------------------------------
// Routes over HTTP

const jsonHeaders = { "content-type": "application/json" };

async function workerSessions(server: ServerProcess, n: number): Promise<Session[]> {
  const sessions = await Promise.all(Array.from({ length: n }, () => signIn(server.url)));
  for (const session of sessions) {
    for (const secretType of SECRET_TYPES) {
      const response = await putSecret(
        server.url,
        session.accessToken,
        secretType,
        `sk-bench-${secretType}-${crypto.randomUUID()}`,
      );
      if (response.status !== 200) throw new Error(`PUT: ${await response.text()}`);
    }
  }
  return sessions;
}

async function proofPool(server: ServerProcess, n: number) {
  const wallets = Array.from({ length: 16 }, () => newAccount());
  const proofs: { message: string; signature: string }[] = [];
  for (let i = 0; i < n; i += 16) {
    proofs.push(
      ...await Promise.all(
        wallets.slice(0, Math.min(16, n - i)).map((w) => preparedProof(server.url, w)),
      ),
    );
  }
  return proofs;
}

const ROUTE_LABELS: Record<string, string> = {
  nonce: "POST /api/auth/nonce",
  "wallet-proof": "POST /api/auth/wallet-proof (full sign-in)",
  list: "GET /api/secrets (token, 7 stored)",
  put: "PUT /api/secrets",
  reveal: "POST /api/secrets/reveal (all 7)",
};

/**
 * What makes an answer count: the route did what its label says (GET listed the seven secrets,
 * reveal returned seven values, sign-in issued a session), not merely answered 2xx.
 */
const ROUTE_OK: Record<string, (response: Response, body: string) => boolean> = {
  nonce: (response, body) => response.status === 200 && typeof JSON.parse(body).nonce === "string",
  "wallet-proof": (response, body) =>
    response.status === 200 && typeof JSON.parse(body).access_token === "string",
  list: (response, body) => response.status === 200 && JSON.parse(body).secrets.length === 7,
  put: (response, body) =>
    response.status === 200 && SECRET_TYPES.includes(JSON.parse(body).secretType),
  reveal: (response, body) =>
    response.status === 200 &&
    JSON.parse(body).secrets.filter((s: { value?: unknown }) => typeof s.value === "string")
        .length === 7,
};

async function routes(
  engine: BenchEngine,
  server: ServerProcess,
  sessions: Session[],
  concurrency: number,
  durationMs: number,
  proofs: { message: string; signature: string }[],
  measures: readonly string[] = ["nonce", "wallet-proof", "list", "put", "reveal"],
) {
  const results: Record<string, Awaited<ReturnType<typeof runLoad>>> = {};
  const cpu: Record<string, number | null> = {};
  const url = server.url;
  const revealToken = server.env.SERVER_REVEAL_TOKEN;
  const auth = (w: number) => ({
    authorization: `Bearer ${sessions[w % sessions.length].accessToken}`,
  });
  let nextProof = 0;
  const scenarios: Record<string, (w: number, i: number) => Request | null> = {
    nonce: () =>
      new Request(`${url}/api/auth/nonce`, { method: "POST", headers: jsonHeaders, body: "{}" }),
    "wallet-proof": () => {
      const proof = proofs[nextProof++];
      return proof === undefined ? null : new Request(`${url}/api/auth/wallet-proof`, {
        method: "POST",
        headers: jsonHeaders,
        body: JSON.stringify(proof),
      });
    },
    list: (w) => new Request(`${url}/api/secrets`, { headers: auth(w) }),
    put: (w, i) =>
      new Request(`${url}/api/secrets`, {
        method: "PUT",
        headers: { ...auth(w), ...jsonHeaders },
        body: JSON.stringify({
          secretType: SECRET_TYPES[i % SECRET_TYPES.length],
          value: `sk-bench-${w}-${i}-0123456789abcdef`,
        }),
      }),
    reveal: (w) =>
      new Request(`${url}/api/secrets/reveal`, {
        method: "POST",
        headers: { ...auth(w), ...jsonHeaders, "x-service-server-secret": revealToken },
        body: "{}",
      }),
  };
  for (const measure of measures) {
    let cpuBefore: number | null = null;
    results[measure] = await runLoad({
      concurrency,
      durationMs,
      warmupMs: measure === "wallet-proof" ? 0 : WARMUP_MS,
      request: scenarios[measure],
      ok: ROUTE_OK[measure],
      beforeMeasuring: async () => {
        cpuBefore = await serverCpuMs(server);
      },
    });
    const cpuAfter = await serverCpuMs(server);
    cpu[measure] = cpuBefore === null || cpuAfter === null
      ? null
      : ((cpuAfter - cpuBefore) * 1000) / results[measure].requests;
    log(
      `${engine.name} ${measure} at ${concurrency}: p50 ${results[measure].p50Ms.toFixed(2)} ms, ${
        results[measure].rps.toFixed(0)
      } req/s, ${results[measure].errors} errors`,
    );
  }
  return { results, cpu };
}

/** What each floor does against the bare server (bench/bare-server.ts). */
const FLOORS = {
  read: {
    label: "bare read (the creator's rows)",
    request: (url: string, user: string) => new Request(`${url}/?user=${user}`),
  },
  "ciphertext read": {
    label: "bare read (the creator's ciphertexts)",
    request: (url: string, user: string) =>
      new Request(`${url}/reveal?user=${user}`, { method: "POST" }),
  },
  // An audited reveal must commit a write: the same read plus one insert, in one round trip.
  "audited read": {
    label: "bare read (the creator's ciphertexts) + one committed insert",
    request: (url: string, user: string) =>
      new Request(`${url}/reveal-audited?user=${user}`, { method: "POST" }),
  },
  write: {
    label: "bare write (one upsert)",
    request: (url: string, user: string, i: number) =>
      new Request(`${url}/?user=${user}&type=${SECRET_TYPES[i % SECRET_TYPES.length]}`, {
        method: "PUT",
      }),
  },
} as const;
type Floor = keyof typeof FLOORS;

/** The floor each route is compared with (wallet-proof's also adds one in-process recovery). */
const FLOOR_OF: Record<string, Floor> = {
  nonce: "write",
  "wallet-proof": "write",
  list: "read",
  put: "write",
  reveal: "audited read",
};
/** A second floor a route is also reported against: reveal beside the plain read. */
const ALSO_AGAINST: Partial<Record<string, Floor>> = { reveal: "ciphertext read" };
/** The route next to which each floor's own row is measured. */
const FLOOR_ROW_FROM: Record<Floor, string> = {
  read: "list",
  "ciphertext read": "reveal",
  "audited read": "reveal",
  write: "put",
};

interface Measured {
  result: Awaited<ReturnType<typeof runLoad>>;
  cpuUsPerRequest: number | null;
}

/** One floor at one concurrency against the bare server, with its CPU per request. */
async function measureFloor(
  engine: BenchEngine,
  bare: ServerProcess,
  sessions: Session[],
  floor: Floor,
  concurrency: number,
  durationMs: number,
): Promise<Measured> {
  let cpuBefore: number | null = null;
  const result = await runLoad({
    concurrency,
    durationMs,
    warmupMs: WARMUP_MS,
    beforeMeasuring: async () => {
      cpuBefore = await serverCpuMs(bare);
    },
    request: (w, i) => FLOORS[floor].request(bare.url, sessions[w % sessions.length].userId, i),
    ok: floor === "write"
      ? undefined
      : (response, body) => response.status === 200 && JSON.parse(body).secrets.length === 7,
  });
  const cpuAfter = await serverCpuMs(bare);
  log(
    `${engine.name} ${FLOORS[floor].label} at ${concurrency}: p50 ${result.p50Ms.toFixed(2)} ms, ${
      result.rps.toFixed(0)
    } req/s`,
  );
  return {
    result,
    cpuUsPerRequest: cpuBefore === null || cpuAfter === null
      ? null
      : ((cpuAfter - cpuBefore) * 1000) / result.requests,
  };
}

// ---------------------------------------------------------------------------------------------
// Cold start

async function importMs(module: string): Promise<number> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", new URL("bench/import-time.ts", ROOT).pathname, module],
    cwd: ROOT.pathname,
    env: childEnv({}),
    clearEnv: true,
    stdout: "piped",
    stderr: "null",
  }).output();
  return JSON.parse(new TextDecoder().decode(output.stdout)).importMs;
}

/**
 * Spawns `script` with exactly `env` (see childEnv) and asks for `path` until it answers 200: ms
 * from spawn to that answer, and the answer's body.
 */
async function firstResponse(
  script: string,
  env: Record<string, string>,
  path: string,
  init: RequestInit = {},
): Promise<{ ms: number; body: string }> {
  const port = freePort();
  const start = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", new URL(script, ROOT).pathname],
    cwd: ROOT.pathname,
    env: childEnv({ ...env, DENO_SERVE_ADDRESS: `tcp:127.0.0.1:${port}` }),
    clearEnv: true,
    stdout: "null",
    stderr: "null",
  }).spawn();
  try {
    for (;;) {
      try {
        const response = await fetch(`http://127.0.0.1:${port}${path}`, init);
        const body = await response.text();
        if (response.status === 200) return { ms: performance.now() - start, body };
      } catch {
        // not listening yet
      }
      if (performance.now() - start > 30_000) throw new Error(`${script} never answered 200`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  } finally {
    child.kill("SIGKILL");
    await child.status;
  }
}

const median = (xs: readonly number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

const FUNCTIONS = [
  {
    name: "wallet-proof",
    path: "/functions/v1/wallet-proof/nonce",
    init: { method: "POST", headers: jsonHeaders, body: "{}" },
  },
  { name: "user-secrets", path: "/functions/v1/user-secrets", init: {} },
  { name: "api", path: "/functions/v1/api/secrets", init: {} },
];

/** Copies a directory (`cp -a`), for PGlite data directories. */
async function copyDir(from: string, prefix: string): Promise<string> {
  const to = await Deno.makeTempDir({ prefix });
  const copied = await new Deno.Command("cp", { args: ["-a", `${from}/.`, to] }).output();
  if (!copied.success) throw new Error(`could not copy ${from}`);
  return to;
}

async function coldStarts(
  engine: BenchEngine,
  db: BenchDatabase,
  keys: Record<string, string>,
  server: ServerProcess,
  template: string | null,
  result: RunResult,
) {
  const env = engine.functionEnv(db, keys, server.url);
  const runs = 3;
  const hello: number[] = [];
  for (let i = 0; i <= runs; i++) {
    hello.push((await firstResponse("bench/hello-server.ts", {}, "/")).ms);
  }
  result.coldStart.push({
    engine: engine.name,
    function: "(runtime floor: Deno.serve hello, nothing imported)",
    firstResponseMs: median(hello.slice(1)),
    importMs: null,
    overImportMs: null,
  });
  // Functions never open PGlite: that engine's cold start is the local server's alone.
  for (const fn of env === null ? [] : FUNCTIONS) {
    const times: number[] = [];
    const imports: number[] = [];
    for (let i = 0; i <= runs; i++) {
      // An exclusive engine: each process opens its own copy of the data directory.
      let runEnv = env!;
      let copy: string | null = null;
      if (template !== null) {
        copy = await copyDir(template, "wallet-vault-bench-cold-");
        runEnv = { ...env, PGLITE_DATA_DIR: copy };
      }
      try {
        const { ms, body } = await firstResponse(
          `functions/${fn.name}/index.ts`,
          runEnv,
          fn.path,
          fn.init,
        );
        // The functions that say which storage they run on must say this engine's.
        if (fn.name !== "wallet-proof") {
          const storage = JSON.parse(body).storage;
          if (storage !== engine.storage) {
            throw new Error(`cold-started ${fn.name} runs on ${storage}, not ${engine.storage}`);
          }
        }
        if (i > 0) times.push(ms); // the first run warms Deno's caches
      } finally {
        if (copy) await Deno.remove(copy, { recursive: true }).catch(() => {});
      }
      if (i > 0) imports.push(await importMs(`functions/${fn.name}/handler.ts`));
    }
    const first = median(times);
    const imported = median(imports);
    result.coldStart.push({
      engine: engine.name,
      function: fn.name,
      firstResponseMs: first,
      importMs: imported,
      overImportMs: first - imported,
    });
    log(
      `${engine.name} cold start ${fn.name}: ${first.toFixed(0)} ms (import ${
        imported.toFixed(0)
      } ms)`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Latency growth with the number of creators

async function startChecked(engine: BenchEngine, db: BenchDatabase, keys: Record<string, string>) {
  const server = await engine.startServer(db, keys);
  try {
    await assertStorage(`the ${engine.name} server`, server.url, engine.storage);
  } catch (error) {
    await server.stop();
    throw error;
  }
  return server;
}

async function growthRun(engine: BenchEngine, result: RunResult) {
  if (GROWTH.length === 0) return;
  const db = await engine.createDatabase();
  const keys = serverEnv();
  let server = await startChecked(engine, db, keys);
  try {
    const sessions = await workerSessions(server, 1);
    let seeded = 1; // the measuring creator
    for (const target of GROWTH) {
      if (target > seeded) {
        const t0 = performance.now();
        if (engine.exclusive) await server.stop();
        // Seeded ids are 2..target: the measuring creator makes it `target` creators in all.
        await db.sql(seedCreatorsSql(seeded + 1, target));
        if (engine.exclusive) server = await startChecked(engine, db, keys);
        log(
          `${engine.name}: seeded to ${target} creators in ${
            ((performance.now() - t0) / 1000).toFixed(1)
          } s`,
        );
        seeded = target;
      }
      const proofs = await proofPool(server, 160);
      const { results } = await routes(engine, server, sessions, 1, GROWTH_MS, proofs, [
        "list",
        "put",
        "wallet-proof",
      ]);
      for (const [measure, measured] of Object.entries(results)) {
        result.growth.push({
          engine: engine.name,
          creators: target,
          measure,
          p50Ms: measured.p50Ms,
          p99Ms: measured.p99Ms,
          rps: measured.rps,
        });
      }
    }
  } finally {
    await server.stop();
    await db.drop();
  }
}

// ---------------------------------------------------------------------------------------------

async function benchEngine(
  engine: BenchEngine,
  recoveryNow: () => Promise<number>,
  result: RunResult,
) {
  const db = await engine.createDatabase();
  const keys = serverEnv();
  let server = await startChecked(engine, db, keys);
  let template: string | null = null;
  try {
    log(`${engine.name}: server up at ${server.url}, storage checked (${engine.storage})`);
    const sessions = await workerSessions(server, CONCURRENCY);
    // The floors' own creators: the write floor puts random bytes where ciphertexts were, which
    // reveal, measured after it, must not find.
    const floorSessions = await workerSessions(server, CONCURRENCY);
    const loadedProofs = await proofPool(server, 1200);
    const singleProofs = await proofPool(server, 400);
    const phases = [
      { concurrency: 1, durationMs: SINGLE_MS, proofs: singleProofs },
      { concurrency: CONCURRENCY, durationMs: DURATION_MS, proofs: loadedProofs },
    ];
    const measures = ["nonce", "wallet-proof", "list", "put", "reveal"];
    // route → [at 1, loaded], and the floor measured for it, likewise.
    const route: Record<string, Measured[]> = {};
    const floorFor: Record<string, Measured[]> = {};
    const alsoFloorFor: Record<string, Measured[]> = {};
    // wallet-proof's in-process recovery, timed right after it in each phase.
    const recoveryAt: number[] = [];
    const measureRoute = async (measure: string, phase: typeof phases[number]) => {
      const measured = await measureRouteOnly(measure, phase);
      if (measure === "wallet-proof") recoveryAt.push(await recoveryNow());
      return measured;
    };
    const measureRouteOnly = async (measure: string, phase: typeof phases[number]) => {
      const { results, cpu } = await routes(
        engine,
        server,
        sessions,
        phase.concurrency,
        phase.durationMs,
        phase.proofs,
        [measure],
      );
      return { result: results[measure], cpuUsPerRequest: cpu[measure] };
    };
    // Concurrency 1 first, on a database not yet churned by the loaded runs (autovacuum and
    // checkpoints after them were measurably slowing the unqueued latencies).
    if (!engine.exclusive) {
      // Each route, then its floor right after it: a busy moment of a shared machine hits both,
      // rather than the routes at one time and the floors a minute later.
      const floor = await engine.startFloor(db, keys);
      try {
        await assertStorage(`the ${engine.name} floor`, floor.url, engine.storage, "/ready");
        for (const phase of phases) {
          for (const measure of measures) {
            (route[measure] ??= []).push(await measureRoute(measure, phase));
            (floorFor[measure] ??= []).push(
              await measureFloor(
                engine,
                floor,
                floorSessions,
                FLOOR_OF[measure],
                phase.concurrency,
                phase.durationMs,
              ),
            );
            const also = ALSO_AGAINST[measure];
            if (also !== undefined) {
              (alsoFloorFor[measure] ??= []).push(
                await measureFloor(
                  engine,
                  floor,
                  floorSessions,
                  also,
                  phase.concurrency,
                  phase.durationMs,
                ),
              );
            }
          }
        }
      } finally {
        await floor.stop();
      }
    } else {
      // One process at a time: every route, then every floor.
      for (const phase of phases) {
        for (const measure of measures) {
          (route[measure] ??= []).push(await measureRoute(measure, phase));
        }
      }
      await server.stop();
      const floor = await engine.startFloor(db, keys);
      const floors: Partial<Record<Floor, Measured[]>> = {};
      try {
        await assertStorage(`the ${engine.name} floor`, floor.url, engine.storage, "/ready");
        for (const phase of phases) {
          for (const key of Object.keys(FLOORS) as Floor[]) {
            (floors[key] ??= []).push(
              await measureFloor(
                engine,
                floor,
                floorSessions,
                key,
                phase.concurrency,
                phase.durationMs,
              ),
            );
          }
        }
      } finally {
        await floor.stop();
      }
      for (const measure of measures) {
        floorFor[measure] = floors[FLOOR_OF[measure]]!;
        const also = ALSO_AGAINST[measure];
        if (also !== undefined) alsoFloorFor[measure] = floors[also]!;
      }
      // Cold-started functions each get a copy, taken while no process has the directory open.
      template = await copyDir(db.dataDir!, "wallet-vault-bench-template-");
      server = await startChecked(engine, db, keys);
    }

    for (const floorKey of Object.keys(FLOORS) as Floor[]) {
      const from = FLOOR_ROW_FROM[floorKey];
      const [single, loaded] = ALSO_AGAINST[from] === floorKey
        ? alsoFloorFor[from]
        : floorFor[from];
      result.rows.push({
        id: `${engine.name}/floor:${floorKey}`,
        engine: engine.name,
        measure: `baseline: bare Deno.serve + ${FLOORS[floorKey].label.replace("bare ", "")}`,
        concurrency: CONCURRENCY,
        requests: loaded.result.requests,
        errors: loaded.result.errors + single.result.errors,
        p50Ms: loaded.result.p50Ms,
        p99Ms: loaded.result.p99Ms,
        rps: loaded.result.rps,
        baseline: null,
        baselineP50Ms: null,
        ratio: null,
        p50At1Ms: single.result.p50Ms,
        cpuUsPerRequest: loaded.cpuUsPerRequest,
      });
    }
    // Each route against the one query it cannot do without, measured next to it: the nonce and
    // wallet-proof write (wallet-proof also recovers one signature), the list and reveal read.
    for (const measure of measures) {
      const [single, loaded] = route[measure];
      const [floorSingle, floorLoaded] = floorFor[measure];
      const [recoveryAt1, recoveryLoaded] = measure === "wallet-proof" ? recoveryAt : [0, 0];
      const floorMs = recoveryLoaded + floorLoaded.result.p50Ms;
      const floorAt1 = recoveryAt1 + floorSingle.result.p50Ms;
      result.rows.push({
        id: `${engine.name}/${measure}`,
        engine: engine.name,
        measure: ROUTE_LABELS[measure],
        concurrency: CONCURRENCY,
        requests: loaded.result.requests,
        errors: loaded.result.errors + single.result.errors,
        p50Ms: loaded.result.p50Ms,
        p99Ms: loaded.result.p99Ms,
        rps: loaded.result.rps,
        baseline: measure === "wallet-proof"
          ? "recovery + bare write"
          : FLOORS[FLOOR_OF[measure]].label,
        baselineP50Ms: floorMs,
        ratio: loaded.result.p50Ms / floorMs,
        p50At1Ms: single.result.p50Ms,
        ratioAt1: single.result.p50Ms / floorAt1,
        cpuUsPerRequest: loaded.cpuUsPerRequest,
      });
      const also = ALSO_AGAINST[measure];
      if (also !== undefined) {
        const [plainSingle, plainLoaded] = alsoFloorFor[measure];
        result.rows.push({
          ...result.rows[result.rows.length - 1],
          id: `${engine.name}/${measure}-vs-${also.replaceAll(" ", "-")}`,
          measure: `${ROUTE_LABELS[measure]}, against the plain read`,
          baseline: FLOORS[also].label,
          baselineP50Ms: plainLoaded.result.p50Ms,
          ratio: loaded.result.p50Ms / plainLoaded.result.p50Ms,
          ratioAt1: single.result.p50Ms / plainSingle.result.p50Ms,
        });
      }
    }
    await coldStarts(engine, db, keys, server, template, result);
  } finally {
    await server.stop();
    await db.drop();
    if (template) await Deno.remove(template, { recursive: true }).catch(() => {});
  }
  await growthRun(engine, result);
}

// ---------------------------------------------------------------------------------------------
// Summary over the runs: each figure's median and min–max

interface Spread {
  median: number;
  min: number;
  max: number;
}

function spread(values: readonly (number | null | undefined)[]): Spread | null {
  const present = values.filter((v): v is number => typeof v === "number" && !Number.isNaN(v));
  if (present.length === 0) return null;
  return { median: median(present), min: Math.min(...present), max: Math.max(...present) };
}

function summarize(runs: readonly RunResult[]) {
  const rowIds = [...new Set(runs.flatMap((r) => r.rows.map((row) => row.id)))];
  const rows = rowIds.map((id) => {
    const each = runs.flatMap((r) => r.rows.filter((row) => row.id === id));
    const first = each[0];
    return {
      id,
      engine: first.engine,
      measure: first.measure,
      concurrency: first.concurrency,
      baseline: first.baseline,
      runs: each.length,
      requests: each.reduce((n, row) => n + row.requests, 0),
      errors: each.reduce((n, row) => n + row.errors, 0),
      p50Ms: spread(each.map((row) => row.p50Ms)),
      p99Ms: spread(each.map((row) => row.p99Ms)),
      rps: spread(each.map((row) => row.rps)),
      cpuUsPerRequest: spread(each.map((row) => row.cpuUsPerRequest)),
      baselineP50Ms: spread(each.map((row) => row.baselineP50Ms)),
      ratio: spread(each.map((row) => row.ratio)),
      p50At1Ms: spread(each.map((row) => row.p50At1Ms)),
      ratioAt1: spread(each.map((row) => row.ratioAt1)),
    };
  });
  const coldKeys = [
    ...new Set(runs.flatMap((r) => r.coldStart.map((c) => `${c.engine}|${c.function}`))),
  ];
  const coldStart = coldKeys.map((key) => {
    const each = runs.flatMap((r) =>
      r.coldStart.filter((c) => `${c.engine}|${c.function}` === key)
    );
    return {
      engine: each[0].engine,
      function: each[0].function,
      firstResponseMs: spread(each.map((c) => c.firstResponseMs)),
      importMs: spread(each.map((c) => c.importMs)),
      overImportMs: spread(each.map((c) => c.overImportMs)),
    };
  });
  const growthKeys = [
    ...new Set(runs.flatMap((r) => r.growth.map((g) => `${g.engine}|${g.creators}|${g.measure}`))),
  ];
  const growth = growthKeys.map((key) => {
    const each = runs.flatMap((r) =>
      r.growth.filter((g) => `${g.engine}|${g.creators}|${g.measure}` === key)
    );
    return {
      engine: each[0].engine,
      creators: each[0].creators,
      measure: each[0].measure,
      p50Ms: spread(each.map((g) => g.p50Ms)),
      p99Ms: spread(each.map((g) => g.p99Ms)),
    };
  });
  return { rows, coldStart, growth };
}

// ---------------------------------------------------------------------------------------------
// The machine and the code measured

async function commandOutput(command: string, args: string[]): Promise<string | null> {
  try {
    const output = await new Deno.Command(command, { args, stdout: "piped", stderr: "null" })
      .output();
    return output.success ? new TextDecoder().decode(output.stdout).trim() : null;
  } catch {
    return null;
  }
}

async function machine() {
  // /proc is read with `cat`: Deno reads it itself only with --allow-all.
  const cpuinfo = await commandOutput("cat", ["/proc/cpuinfo"]) ?? "";
  const cpuModel = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? Deno.build.arch;
  let postgres: string | null = null;
  if (postgresAdminUrl !== null) {
    const { default: postgresJs } = await import("postgres");
    const sql = postgresJs(postgresAdminUrl, { max: 1, onnotice: () => {} });
    try {
      postgres = (await sql`show server_version`)[0].server_version;
    } finally {
      await sql.end({ timeout: 1 });
    }
  }
  return {
    cpuModel,
    cores: navigator.hardwareConcurrency,
    memoryGiB: Math.round(Deno.systemMemoryInfo().total / 2 ** 30),
    os: `${Deno.build.os} ${Deno.build.arch}`,
    deno: Deno.version.deno,
    v8: Deno.version.v8,
    postgres,
    loadAverageAtStart: Deno.loadavg(),
  };
}

async function commit(): Promise<string> {
  // BENCH_COMMIT: when measuring a copy without .git (git archive), name the commit it holds.
  const given = Deno.env.get("BENCH_COMMIT");
  if (given) return given;
  const head = await commandOutput("git", ["rev-parse", "--short", "HEAD"]);
  if (head === null) return "unknown";
  const status = await commandOutput("git", ["status", "--porcelain", "--untracked-files=no"]);
  return status ? `${head} + uncommitted changes` : head;
}

// ---------------------------------------------------------------------------------------------

const wanted = (Deno.env.get("BENCH_ENGINES") ?? "postgres,pglite,deployed").split(",");
const engines: BenchEngine[] = [];
const notes: string[] = [];
for (const engine of ENGINES.filter((e) => wanted.includes(e.name))) {
  const why = await engine.available();
  if (why === null) engines.push(engine);
  else notes.push(`${engine.name}: skipped (${why})`);
}
const host = await machine();
const measuredCommit = await commit();

log(
  `${RUNS} run(s); engines: ${
    engines.map((e) => e.name).join(", ")
  }; concurrency ${CONCURRENCY}; ` +
    `${DURATION_MS} ms per route (${SINGLE_MS} ms at 1)`,
);
const runs: RunResult[] = [];
for (let run = 1; run <= RUNS; run++) {
  log(`run ${run} of ${RUNS}`);
  const result: RunResult = { run, rows: [], coldStart: [], growth: [] };
  const { recoveryNow } = await inProcess(result);
  for (const engine of engines) await benchEngine(engine, recoveryNow, result);
  runs.push(result);
}

notes.push(
  "GET /api/secrets and reveal run with 7 stored secrets per creator: the spec has seven secret types, so 7 is the most a creator can store. An answer counts only if it did what the row's label says (GET lists 7, reveal returns 7 values, sign-in issues a session, PUT names the type it saved); anything else is an error.",
  "Each route's floor is the bare server doing the one query the route cannot do without, through the same driver: GET /api/secrets the creator's rows, reveal the creator's ciphertexts, PUT and the nonce one upsert; wallet-proof's is one signature recovery (viem, in-process p50, timed right after the route) plus that write, at the same concurrency. On PostgreSQL each floor is measured right after its route (the floor rows: next to GET, reveal and PUT); on PGlite, which allows one process per data directory, after all the routes.",
  "Every server, floor and function process gets exactly its engine's environment (only PATH, HOME and Deno's own variables are inherited), and the bench checks the storage each reports before measuring it.",
  "'at 1' columns: the same route at concurrency 1 (unqueued latency) against the floor at concurrency 1; the main columns run at the fixed concurrency, where a two-core machine queues CPU work and p50 tracks throughput.",
  "server CPU µs/req: CPU time (user + system) of the server process per request at the fixed concurrency, from /proc; it moves much less than latency when other work shares the machine.",
  "Growth runs at concurrency 1 on one creator; the other creators are seeded in bulk with a session and all seven secrets each.",
);
const meta = {
  date: new Date().toISOString(),
  commit: measuredCommit,
  machine: { ...host, loadAverageAtEnd: Deno.loadavg() },
  runs: RUNS,
  engines: engines.map((e) => ({ name: e.name, storage: e.storage, targeted: e.targeted })),
  concurrency: CONCURRENCY,
  durationMs: DURATION_MS,
  singleMs: SINGLE_MS,
  growth: GROWTH,
  totalSeconds: (performance.now() - startedAt) / 1000,
};
const summary = summarize(runs);
await Deno.mkdir(new URL(OUT, ROOT).pathname.replace(/\/[^/]+$/, ""), { recursive: true });
await Deno.writeTextFile(
  new URL(OUT, ROOT),
  JSON.stringify({ meta, summary, runs, notes }, null, 2) + "\n",
);
log(`wrote ${OUT} (${meta.totalSeconds.toFixed(0)} s in all); tables: deno task bench:report`);
