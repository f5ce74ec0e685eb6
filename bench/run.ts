/**
 * `deno task bench`: how fast the service is, measured side by side in one run, loopback only.
 *
 * For each engine (real PostgreSQL when DATABASE_URL is set or one answers on 127.0.0.1:5432, and
 * embedded PGlite), the local server (server/main.ts) runs as its own process on a free loopback
 * port on a fresh database, and a closed-loop client drives each route at a fixed concurrency:
 * nonce issue, the full wallet-proof, GET /api/secrets (seven stored secrets: there are seven
 * types), PUT, and reveal of all seven. Beside them, measured in the same run, their floors:
 * bare secp256k1 recovery of one signature (viem), the `siwe` package's own verify of the same
 * message, and a bare Deno.serve handler doing the one indexed query each route needs (a read
 * of the creator's rows, a read of its ciphertexts, one upsert) through the same driver. Then cold start per function and latency growth from 1 to 100,000 creators.
 *
 * Prints one table and writes everything to bench/results/latest.json.
 * Knobs: BENCH_CONCURRENCY (8), BENCH_DURATION_MS (3000), BENCH_GROWTH ("1,1000,100000"),
 * BENCH_ENGINES ("postgres,pglite"), BENCH_OUT (bench/results/latest.json).
 */
import { SiweMessage } from "siwe";
import { recoverMessageAddress } from "viem";
import { buildSiweMessage, checkSiweMessage, verifySignature } from "../functions/_shared/siwe.ts";
import { SECRET_TYPES } from "../functions/_shared/secret-types.ts";
import { runLoad, timeLoop } from "./http-load.ts";
import {
  type BenchDatabase,
  cpuMs,
  createDatabase,
  type Engine,
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
  startServer,
} from "./support.ts";

const CONCURRENCY = Number(Deno.env.get("BENCH_CONCURRENCY") ?? 8);
const DURATION_MS = Number(Deno.env.get("BENCH_DURATION_MS") ?? 3000);
const WARMUP_MS = 500;
const GROWTH = (Deno.env.get("BENCH_GROWTH") ?? "1,1000,100000").split(",").map(Number);
const GROWTH_MS = 2000;
/** Each route also runs this long at concurrency 1, for its unqueued latency. */
const SINGLE_MS = 1500;
const OUT = Deno.env.get("BENCH_OUT") ?? "bench/results/latest.json";
const ROOT = new URL("../", import.meta.url);

const startedAt = performance.now();
const log = (line: string) =>
  console.error(`[${((performance.now() - startedAt) / 1000).toFixed(1).padStart(5)} s] ${line}`);

interface Row {
  engine: Engine | "in-process";
  measure: string;
  concurrency: number;
  requests: number;
  errors: number;
  p50Ms: number;
  p99Ms: number;
  rps: number;
  baseline: string | null;
  baselineP50Ms: number | null;
  /** p50 / baseline p50. */
  ratio: number | null;
  /** The same at concurrency 1: unqueued latency, and its ratio to the floor at concurrency 1. */
  p50At1Ms?: number;
  ratioAt1?: number;
  /** CPU the server process spent per request at the fixed concurrency (robust to a busy machine). */
  cpuUsPerRequest?: number | null;
}

const rows: Row[] = [];
const growth: {
  engine: Engine;
  creators: number;
  measure: string;
  p50Ms: number;
  p99Ms: number;
  rps: number;
}[] = [];
const coldStart: {
  engine: Engine;
  function: string;
  firstResponseMs: number;
  importMs: number | null;
  overImportMs: number | null;
}[] = [];
const notes: string[] = [];

// ---------------------------------------------------------------------------------------------
// In-process floors: signature recovery, and the siwe package's verify of the same message

async function cpuBaselines() {
  const account = newAccount();
  const origin = "http://127.0.0.1:54321";
  const message = buildSiweMessage({
    address: account.address,
    domain: "127.0.0.1:54321",
    uri: origin,
    chainId: 1,
    nonce: "benchNonce0123456789abcdefABCDEF",
    issuedAt: new Date(),
    expirationTime: new Date(Date.now() + 600_000),
    statement: "Sign in to wallet-vault-bench.",
  });
  const signature = await account.signMessage({ message });

  const recovery = await timeLoop(() => recoverMessageAddress({ message, signature }), 1500);
  rows.push({
    engine: "in-process",
    measure: "bare secp256k1 recovery (viem recoverMessageAddress)",
    concurrency: 1,
    requests: recovery.runs,
    errors: 0,
    p50Ms: recovery.p50Ms,
    p99Ms: recovery.p99Ms,
    rps: recovery.opsPerSecond,
    baseline: null,
    baselineP50Ms: null,
    ratio: null,
  });
  const siwe = await timeLoop(async () => {
    const result = await new SiweMessage(message).verify({ signature });
    if (!result.success) throw new Error("siwe verify failed");
  }, 1500);
  rows.push({
    engine: "in-process",
    measure: "siwe package verify (SiweMessage.verify, ethers)",
    concurrency: 1,
    requests: siwe.runs,
    errors: 0,
    p50Ms: siwe.p50Ms,
    p99Ms: siwe.p99Ms,
    rps: siwe.opsPerSecond,
    baseline: "secp256k1 recovery",
    baselineP50Ms: recovery.p50Ms,
    ratio: siwe.p50Ms / recovery.p50Ms,
  });
  const ours = await timeLoop(() => {
    const fields = checkSiweMessage(message, {
      origins: [origin],
      chainIds: null,
      now: new Date(),
      clockSkewMs: 60_000,
    });
    verifySignature(message, signature, fields.address);
  }, 1500);
  rows.push({
    engine: "in-process",
    measure: "our message check + signature verify (siwe.ts)",
    concurrency: 1,
    requests: ours.runs,
    errors: 0,
    p50Ms: ours.p50Ms,
    p99Ms: ours.p99Ms,
    rps: ours.opsPerSecond,
    baseline: "siwe package verify",
    baselineP50Ms: siwe.p50Ms,
    ratio: ours.p50Ms / siwe.p50Ms,
  });
  return { recoveryP50: recovery.p50Ms };
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

async function routes(
  engine: Engine,
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
      ok: measure === "reveal"
        ? (response, body) => response.status === 200 && JSON.parse(body).secrets.length === 7
        : undefined,
      beforeMeasuring: async () => {
        cpuBefore = await cpuMs(server.pid);
      },
    });
    const cpuAfter = await cpuMs(server.pid);
    cpu[measure] = cpuBefore === null || cpuAfter === null
      ? null
      : ((cpuAfter - cpuBefore) * 1000) / results[measure].requests;
    log(
      `${engine} ${measure}: p50 ${results[measure].p50Ms.toFixed(2)} ms, ${
        results[measure].rps.toFixed(0)
      } req/s`,
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
  // An audited reveal must commit a write: the same read plus one insert, one round trip.
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

async function bareQueries(
  engine: Engine,
  db: BenchDatabase,
  env: Record<string, string>,
  sessions: Session[],
) {
  const bare = await startProcess("bench/bare-server.ts", { ...env, ...db.env }, "/ready");
  const floors = {} as Record<Floor, {
    loaded: Awaited<ReturnType<typeof runLoad>>;
    single: Awaited<ReturnType<typeof runLoad>>;
    cpuUsPerRequest: number | null;
  }>;
  try {
    for (const floor of Object.keys(FLOORS) as Floor[]) {
      let cpuBefore: number | null = null;
      const run = (concurrency: number, durationMs: number) =>
        runLoad({
          concurrency,
          durationMs,
          warmupMs: WARMUP_MS,
          beforeMeasuring: async () => {
            cpuBefore = await cpuMs(bare.pid);
          },
          request: (w, i) =>
            FLOORS[floor].request(bare.url, sessions[w % sessions.length].userId, i),
          ok: floor === "write"
            ? undefined
            : (response, body) => response.status === 200 && JSON.parse(body).secrets.length === 7,
        });
      const loaded = await run(CONCURRENCY, DURATION_MS);
      const cpuAfter = await cpuMs(bare.pid);
      const cpuUsPerRequest = cpuBefore === null || cpuAfter === null
        ? null
        : ((cpuAfter - cpuBefore) * 1000) / loaded.requests;
      const single = await run(1, SINGLE_MS);
      log(
        `${engine} ${FLOORS[floor].label}: p50 ${loaded.p50Ms.toFixed(2)} ms, ` +
          `${loaded.rps.toFixed(0)} req/s; p50 at 1: ${single.p50Ms.toFixed(2)} ms`,
      );
      floors[floor] = { loaded, single, cpuUsPerRequest };
    }
    return floors;
  } finally {
    await bare.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// Cold start

async function importMs(module: string): Promise<number> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", new URL("bench/import-time.ts", ROOT).pathname, module],
    cwd: ROOT.pathname,
    stdout: "piped",
    stderr: "null",
  }).output();
  return JSON.parse(new TextDecoder().decode(output.stdout)).importMs;
}

/** Spawns `script` and asks for `path` until it answers 200: ms from spawn to that answer. */
async function firstResponseMs(
  script: string,
  env: Record<string, string>,
  path: string,
  init: RequestInit = {},
): Promise<number> {
  const port = freePort();
  const start = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", new URL(script, ROOT).pathname],
    cwd: ROOT.pathname,
    env: { ...env, DENO_SERVE_ADDRESS: `tcp:127.0.0.1:${port}` },
    stdout: "null",
    stderr: "null",
  }).spawn();
  try {
    for (;;) {
      try {
        const response = await fetch(`http://127.0.0.1:${port}${path}`, init);
        await response.body?.cancel();
        if (response.status === 200) return performance.now() - start;
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

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

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
  engine: Engine,
  db: BenchDatabase,
  server: ServerProcess,
  pgliteTemplate: string | null,
) {
  const env: Record<string, string> = {
    ...server.env,
    ...db.env,
    ALLOWED_ORIGINS: "http://127.0.0.1:54321",
    // The api function forwards to the functions there: the running local server.
    SUPABASE_URL: server.url,
  };
  delete env.PORT;
  const runs = 3;
  const hello: number[] = [];
  for (let i = 0; i <= runs; i++) {
    hello.push(await firstResponseMs("bench/hello-server.ts", {}, "/"));
  }
  coldStart.push({
    engine,
    function: "(runtime floor: Deno.serve hello, nothing imported)",
    firstResponseMs: median(hello.slice(1)),
    importMs: null,
    overImportMs: null,
  });
  for (const fn of FUNCTIONS) {
    const times: number[] = [];
    const imports: number[] = [];
    for (let i = 0; i <= runs; i++) {
      // PGlite: each process opens its own copy of the data directory (one process per directory).
      let runEnv = env;
      let copy: string | null = null;
      if (pgliteTemplate !== null) {
        copy = await copyDir(pgliteTemplate, "wallet-vault-bench-cold-");
        runEnv = { ...env, PGLITE_DATA_DIR: copy };
      }
      try {
        const ms = await firstResponseMs(`functions/${fn.name}/index.ts`, runEnv, fn.path, fn.init);
        if (i > 0) times.push(ms); // the first run warms Deno's caches
      } finally {
        if (copy) await Deno.remove(copy, { recursive: true }).catch(() => {});
      }
      if (i > 0) imports.push(await importMs(`functions/${fn.name}/handler.ts`));
    }
    const first = median(times);
    const imported = median(imports);
    coldStart.push({
      engine,
      function: fn.name,
      firstResponseMs: first,
      importMs: imported,
      overImportMs: first - imported,
    });
    log(
      `${engine} cold start ${fn.name}: ${first.toFixed(0)} ms (import ${imported.toFixed(0)} ms)`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Latency growth with the number of creators

async function growthRun(engine: Engine, adminUrl: string | null) {
  const db = await createDatabase(engine, adminUrl);
  const env = serverEnv(db.env);
  let server = await startServer(env);
  try {
    const sessions = await workerSessions(server, 1);
    let seeded = 1; // the measuring creator
    for (const target of GROWTH) {
      if (target > seeded) {
        const t0 = performance.now();
        if (engine === "pglite") await server.stop(); // one process per data directory
        // Seeded ids are 2..target: the measuring creator makes it `target` creators in all.
        await db.sql(seedCreatorsSql(seeded + 1, target));
        if (engine === "pglite") server = await startServer(env);
        log(
          `${engine}: seeded to ${target} creators in ${
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
      for (const [measure, result] of Object.entries(results)) {
        growth.push({
          engine,
          creators: target,
          measure,
          p50Ms: result.p50Ms,
          p99Ms: result.p99Ms,
          rps: result.rps,
        });
      }
    }
  } finally {
    await server.stop();
    await db.drop();
  }
}

// ---------------------------------------------------------------------------------------------

async function benchEngine(engine: Engine, adminUrl: string | null, recoveryP50: number) {
  const db = await createDatabase(engine, adminUrl);
  const env = serverEnv(db.env);
  let server = await startServer(env);
  let pgliteTemplate: string | null = null;
  try {
    log(`${engine}: server up at ${server.url}`);
    const sessions = await workerSessions(server, CONCURRENCY);
    const proofs = await proofPool(server, 1200);
    // Concurrency 1 first, on a database not yet churned by the loaded runs (autovacuum and
    // checkpoints after them were measurably slowing the unqueued latencies).
    const singleProofs = await proofPool(server, 400);
    const { results: single } = await routes(engine, server, sessions, 1, SINGLE_MS, singleProofs);
    const { results, cpu } = await routes(
      engine,
      server,
      sessions,
      CONCURRENCY,
      DURATION_MS,
      proofs,
    );
    if (engine === "pglite") await server.stop(); // the bare server opens the same directory
    const bare = await bareQueries(engine, db, env, sessions);
    // Cold-started PGlite functions each get a copy, taken while no process has it open.
    if (engine === "pglite") {
      pgliteTemplate = await copyDir(db.dataDir!, "wallet-vault-bench-template-");
      server = await startServer(env);
    }

    for (const floor of Object.keys(FLOORS) as Floor[]) {
      const { loaded, single, cpuUsPerRequest } = bare[floor];
      rows.push({
        engine,
        measure: `baseline: bare Deno.serve + ${FLOORS[floor].label.replace("bare ", "")}`,
        concurrency: CONCURRENCY,
        requests: loaded.requests,
        errors: loaded.errors,
        p50Ms: loaded.p50Ms,
        p99Ms: loaded.p99Ms,
        rps: loaded.rps,
        baseline: null,
        baselineP50Ms: null,
        ratio: null,
        p50At1Ms: single.p50Ms,
        cpuUsPerRequest,
      });
    }
    // Each route against the one query it cannot do without: the nonce and wallet-proof write
    // (wallet-proof also recovers one signature), the list and reveal read.
    const floorOf = (floor: Floor, name = FLOORS[floor].label): [string, number, number] => [
      name,
      bare[floor].loaded.p50Ms,
      bare[floor].single.p50Ms,
    ];
    const floors: Record<string, [string, number, number]> = {
      nonce: floorOf("write"),
      "wallet-proof": [
        "recovery + bare write",
        recoveryP50 + bare.write.loaded.p50Ms,
        recoveryP50 + bare.write.single.p50Ms,
      ],
      list: floorOf("read"),
      put: floorOf("write"),
      reveal: floorOf("audited read"),
    };
    const labels: Record<string, string> = {
      nonce: "POST /api/auth/nonce",
      "wallet-proof": "POST /api/auth/wallet-proof (full sign-in)",
      list: "GET /api/secrets (token, 7 stored)",
      put: "PUT /api/secrets",
      reveal: "POST /api/secrets/reveal (all 7)",
    };
    for (const [measure, result] of Object.entries(results)) {
      const [baseline, floor, floorAt1] = floors[measure];
      rows.push({
        engine,
        measure: labels[measure],
        concurrency: CONCURRENCY,
        requests: result.requests,
        errors: result.errors + single[measure].errors,
        p50Ms: result.p50Ms,
        p99Ms: result.p99Ms,
        rps: result.rps,
        baseline,
        baselineP50Ms: floor,
        ratio: result.p50Ms / floor,
        p50At1Ms: single[measure].p50Ms,
        ratioAt1: single[measure].p50Ms / floorAt1,
        cpuUsPerRequest: cpu[measure],
      });
      // Reveal (issue 15 item 3): reported against the plain read floor too.
      if (measure === "reveal") {
        const plain = bare["ciphertext read"];
        rows.push({
          ...rows[rows.length - 1],
          measure: `${labels.reveal}, against the plain read`,
          baseline: FLOORS["ciphertext read"].label,
          baselineP50Ms: plain.loaded.p50Ms,
          ratio: result.p50Ms / plain.loaded.p50Ms,
          ratioAt1: single.reveal.p50Ms / plain.single.p50Ms,
        });
      }
    }
    await coldStarts(engine, db, server, pgliteTemplate);
  } finally {
    await server.stop();
    await db.drop();
    if (pgliteTemplate) await Deno.remove(pgliteTemplate, { recursive: true }).catch(() => {});
  }
  await growthRun(engine, adminUrl);
}

function fmt(n: number | null, digits = 2): string {
  return n === null || Number.isNaN(n) ? "" : n.toFixed(digits);
}

function table(): string {
  const lines = [
    "| engine | measure | conc. | p50 ms | p99 ms | req/s | server CPU µs/req | errors | baseline (p50 ms) | ratio | p50 ms at 1 | ratio at 1 |",
    "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|",
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.engine} | ${r.measure} | ${r.concurrency} | ${fmt(r.p50Ms)} | ${fmt(r.p99Ms)} | ${
        fmt(r.rps, 0)
      } | ${fmt(r.cpuUsPerRequest ?? null, 0)} | ${r.errors} | ${
        r.baseline ? `${r.baseline} (${fmt(r.baselineP50Ms)})` : ""
      } | ${r.ratio === null ? "" : `${fmt(r.ratio)}×`} | ${fmt(r.p50At1Ms ?? null)} | ${
        r.ratioAt1 === undefined ? "" : `${fmt(r.ratioAt1)}×`
      } |`,
    );
  }
  lines.push("");
  lines.push(
    "| engine | function | first response ms | handler import ms | first response − import ms |",
  );
  lines.push("|---|---|---:|---:|---:|");
  for (const c of coldStart) {
    lines.push(
      `| ${c.engine} | ${c.function} | ${fmt(c.firstResponseMs, 0)} | ${fmt(c.importMs, 0)} | ${
        fmt(c.overImportMs, 0)
      } |`,
    );
  }
  lines.push("");
  const measures = [...new Set(growth.map((g) => g.measure))];
  lines.push(`| engine | creators | ${measures.map((m) => `${m} p50 / p99 ms`).join(" | ")} |`);
  lines.push(`|---|---:|${measures.map(() => "---:").join("|")}|`);
  for (const engine of [...new Set(growth.map((g) => g.engine))]) {
    for (const creators of [...new Set(growth.map((g) => g.creators))]) {
      const cells = measures.map((m) => {
        const g = growth.find((x) =>
          x.engine === engine && x.creators === creators && x.measure === m
        );
        return g ? `${fmt(g.p50Ms)} / ${fmt(g.p99Ms)}` : "";
      });
      lines.push(`| ${engine} | ${creators.toLocaleString("en")} | ${cells.join(" | ")} |`);
    }
  }
  return lines.join("\n");
}

// ---------------------------------------------------------------------------------------------

const wanted = (Deno.env.get("BENCH_ENGINES") ?? "postgres,pglite").split(",");
const adminUrl = wanted.includes("postgres") ? await findPostgres() : null;
const engines: Engine[] = [];
if (wanted.includes("postgres")) {
  if (adminUrl) engines.push("postgres");
  else notes.push("PostgreSQL: skipped (no DATABASE_URL and nothing answers on 127.0.0.1:5432)");
}
if (wanted.includes("pglite")) engines.push("pglite");

log(`engines: ${engines.join(", ")}; concurrency ${CONCURRENCY}; ${DURATION_MS} ms per route`);
const { recoveryP50 } = await cpuBaselines();
for (const engine of engines) await benchEngine(engine, adminUrl, recoveryP50);

notes.push(
  "GET /api/secrets and reveal run with 7 stored secrets per creator: the spec has seven secret types, so 7 is the most a creator can store.",
  "Each route's floor is the bare server doing the one query the route cannot do without, through the same driver: GET /api/secrets the creator's rows, reveal the creator's ciphertexts, PUT and the nonce one upsert; wallet-proof's is one signature recovery (in-process p50) plus that write, at the same concurrency.",
  "'at 1' columns: the same route at concurrency 1 (unqueued latency) against the floor at concurrency 1; the main columns run at the fixed concurrency, where a two-core machine queues CPU work and p50 tracks throughput.",
  "server CPU µs/req: CPU time (user + system) of the server process per request at the fixed concurrency, from /proc; it moves much less than latency when other work shares the machine.",
  "Growth runs at concurrency 1 on one creator; the other creators are seeded in bulk with a session and all seven secrets each.",
);
const meta = {
  date: new Date().toISOString(),
  deno: Deno.version.deno,
  os: `${Deno.build.os} ${Deno.build.arch}`,
  cpus: navigator.hardwareConcurrency,
  // BENCH_COMMIT: when measuring a copy without .git (git archive), name the commit it holds.
  commit: Deno.env.get("BENCH_COMMIT") ?? new TextDecoder().decode(
    (await new Deno.Command("git", {
      args: ["rev-parse", "--short", "HEAD"],
      stdout: "piped",
      stderr: "null",
    }).output().catch(() => ({ stdout: new Uint8Array() }))).stdout,
  ).trim(),
  concurrency: CONCURRENCY,
  durationMs: DURATION_MS,
  totalSeconds: (performance.now() - startedAt) / 1000,
};
const markdown = table();
console.log(markdown);
for (const note of notes) console.log(`\n- ${note}`);
await Deno.mkdir(new URL(OUT, ROOT).pathname.replace(/\/[^/]+$/, ""), { recursive: true });
await Deno.writeTextFile(
  new URL(OUT, ROOT),
  JSON.stringify({ meta, rows, coldStart, growth, notes, markdown }, null, 2) + "\n",
);
log(`wrote ${OUT} (${meta.totalSeconds.toFixed(0)} s in all)`);
