/**
 * The routes the bench drives over HTTP: the creators and proofs they need, their labels, what
 * makes an answer count, and the load on each route with the server's CPU per request.
 */
import { SECRET_TYPES } from "../functions/_shared/vault/secret-types.ts";
import type { BenchEngine } from "./engines.ts";
import { runLoad } from "./http-load.ts";
import { cpuMs, type ServerProcess } from "./processes.ts";
import { log, WARMUP_MS } from "./settings.ts";
import { newAccount, preparedProof, putSecret, type Session, signIn } from "./support.ts";

/** Sums CPU over the processes that serve a request (one for the local server). */
export async function serverCpuMs(server: ServerProcess): Promise<number | null> {
  let total = 0;
  for (const pid of server.pids ?? [server.pid]) {
    const ms = await cpuMs(pid);
    if (ms === null) return null;
    total += ms;
  }
  return total;
}

export const jsonHeaders = { "content-type": "application/json" };

export async function workerSessions(server: ServerProcess, n: number): Promise<Session[]> {
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

/**
 * Proofs enough for wallet-proof at `concurrency` for `durationMs`: at more than twice the fastest
 * rate measured here (~560 sign-ins/s at concurrency 8, ~330/s at 1: the run of 5d0fc3b), so a
 * pool lasts the measuring time (one that runs out anyway is reported: `proofsRanOut`). Preparing
 * one takes ~1.3–1.8 ms (a nonce over HTTP and a signature), ~0.6 KB each.
 */
export function proofsFor(concurrency: number, durationMs: number): number {
  const perSecond = concurrency === 1 ? 800 : 1200;
  return Math.ceil((perSecond * durationMs) / 1000);
}

export async function proofPool(server: ServerProcess, n: number) {
  const started = performance.now();
  const wallets = Array.from({ length: 16 }, () => newAccount());
  const proofs: { message: string; signature: string }[] = [];
  for (let i = 0; i < n; i += 16) {
    proofs.push(
      ...await Promise.all(
        wallets.slice(0, Math.min(16, n - i)).map((w) => preparedProof(server.url, w)),
      ),
    );
  }
  log(
    `prepared ${n} wallet-proof proofs in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  return proofs;
}

export const ROUTE_LABELS: Record<string, string> = {
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
export const ROUTE_OK: Record<string, (response: Response, body: string) => boolean> = {
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

/**
 * The i-th request worker w sends on each route (null: nothing left to send). Every worker has its
 * own creator; wallet-proof takes the next unused proof.
 */
export function routeRequests(
  server: ServerProcess,
  sessions: Session[],
  proofs: { message: string; signature: string }[],
): Record<string, (w: number, i: number) => Request | null> {
  const url = server.url;
  const revealToken = server.env.SERVER_REVEAL_TOKEN;
  const auth = (w: number) => ({
    authorization: `Bearer ${sessions[w % sessions.length].accessToken}`,
  });
  let nextProof = 0;
  return {
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
}

export async function routes(
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
  let proofsRanOut = false;
  const scenarios = routeRequests(server, sessions, proofs);
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
    // Each wallet-proof request spends a proof (no warm-up): all spent means the workers found
    // none left before the time was up (or, at worst, the last went at the last moment).
    if (measure === "wallet-proof" && results[measure].requests >= proofs.length) {
      proofsRanOut = true;
      log(`${engine.name} wallet-proof at ${concurrency}: its ${proofs.length} proofs ran out`);
    }
  }
  return { results, cpu, proofsRanOut };
}
