/**
 * What the bench sends: each route and its floor as a stream of requests, each carrying the check
 * its answer must pass to count (a 200 is not enough: GET must list the creator's seven secrets,
 * reveal must return the creator's seven values), and a closed-loop load generator to drive them.
 */
import { SECRET_TYPES } from "../protocol/secret-types.ts";
import { jsonHeaders, log, median, newAccount, preparedProof, signIn } from "./support.ts";
import type { Session } from "./support.ts";

// deno-lint-ignore no-explicit-any
type Body = any;

export type Attempt = { request: Request; ok: (status: number, body: Body) => boolean };

/** The i-th attempt of worker w; null when there is nothing left to send. */
export type Scenario = (worker: number, i: number) => Attempt | null;

export type Load = { requests: number; errors: number; p50Ms: number };

export const ROUTES = {
  nonce: {
    label: "POST /api/auth/nonce",
    floor: "one upsert committed without waiting for the WAL flush, as the nonce commits",
  },
  "wallet-proof": {
    label: "POST /api/auth/wallet-proof",
    floor: "one signature recovery (WebAssembly, as the route), one ES256 signature + one upsert",
  },
  list: {
    label: "GET /api/secrets (7 stored)",
    floor: "one read of the creator's rows with each one's last reveal",
  },
  put: {
    label: "PUT /api/secrets",
    floor: "the JSON body read, its value encrypted (AES-256-GCM, the vault's keyring), one upsert",
  },
  reveal: {
    label: "POST /api/secrets/reveal (all 7)",
    floor: "the JSON body read; one statement: read the creator's ciphertexts and insert one " +
      "audit row; the seven values decrypted (the vault's keyring) while it commits",
  },
} as const;
export type Route = keyof typeof ROUTES;
export const ROUTE_NAMES = Object.keys(ROUTES) as Route[];

/** What runInTurns runs: a scenario, its log label ("" for none), and its warm-up not counted. */
export type Timed = { what: string; scenario: Scenario; warmupMs: number };

/** How long each scenario runs in each turn of runInTurns. */
export const TURN_MS = 250;

/**
 * Closed loop: `concurrency` workers, each sending its next request once the last is answered. The
 * scenarios take turns of TURN_MS, each alone in its turn, for `durationMs` each after its warm-up,
 * so a busy moment of a shared machine hits a route and its floor alike. Logs each scenario's first
 * failed answer, so an error is seen and not only counted.
 */
export async function runInTurns(
  concurrency: number,
  durationMs: number,
  timed: readonly Timed[],
): Promise<Load[]> {
  const runs = timed.map(() => ({ latencies: [] as number[], errors: 0, firstError: "" }));
  const next = timed.map(() => Array.from({ length: concurrency }, () => 0));
  const run = (t: number, stopAt: number, counted: boolean) =>
    Promise.all(next[t].map(async (_, worker) => {
      while (performance.now() < stopAt) {
        const attempt = timed[t].scenario(worker, next[t][worker]++);
        if (attempt === null) return;
        const started = performance.now();
        let answer = "network error";
        let ok = false;
        try {
          const response = await fetch(attempt.request);
          const text = await response.text();
          answer = `${response.status} ${text.slice(0, 300)}`;
          ok = attempt.ok(response.status, JSON.parse(text));
        } catch {
          // an answer that is not JSON fails its check too
        }
        if (!counted) continue;
        runs[t].latencies.push(performance.now() - started);
        if (!ok && runs[t].errors++ === 0) {
          runs[t].firstError = `${new URL(attempt.request.url).pathname}: ${answer}`;
        }
      }
    }));
  for (const [t, { warmupMs }] of timed.entries()) {
    await run(t, performance.now() + warmupMs, false);
  }
  for (let ran = 0; ran < durationMs; ran += TURN_MS) {
    const turn = Math.min(TURN_MS, durationMs - ran);
    for (const t of timed.keys()) await run(t, performance.now() + turn, true);
  }
  return runs.map(({ latencies, errors, firstError }, t) => {
    const { what } = timed[t];
    const load = { requests: latencies.length, errors, p50Ms: median(latencies) };
    if (what !== "") log(`${what}: p50 ${load.p50Ms.toFixed(2)} ms, ${load.requests} requests`);
    if (what !== "" && errors > 0) log(`  ${errors} errors, the first: ${firstError}`);
    return load;
  });
}

export type Proof = { message: string; signature: string; address: string };

/** Proofs for wallet-proof at `concurrency` for `durationMs`, above the highest rate seen here. */
export function proofsFor(concurrency: number, durationMs: number): number {
  return Math.ceil(((concurrency === 1 ? 1600 : 2400) * durationMs) / 1000);
}

export async function proofPool(url: string, n: number): Promise<Proof[]> {
  const wallets = Array.from({ length: 16 }, newAccount);
  const proofs: Proof[] = [];
  for (let i = 0; i < n; i += wallets.length) {
    const batch = wallets.slice(0, Math.min(wallets.length, n - i));
    proofs.push(
      ...await Promise.all(batch.map(async (wallet) => ({
        ...await preparedProof(url, wallet),
        address: wallet.address,
      }))),
    );
  }
  return proofs;
}

/** `n` creators, each with all seven secrets, saved as PUT's route saves them. */
export async function creators(url: string, n: number): Promise<Session[]> {
  const sessions = await Promise.all(Array.from({ length: n }, () => signIn(url)));
  const { put } = routeScenarios(url, "", sessions, []);
  for (let w = 0; w < n; w++) {
    for (let i = 0; i < SECRET_TYPES.length; i++) {
      const attempt = put(w, i)!;
      const response = await fetch(attempt.request);
      if (!attempt.ok(response.status, await response.json())) throw new Error("a PUT failed");
    }
  }
  return sessions;
}

/** Each route's requests; worker w acts as creator w, wallet-proof spends the next proof. */
export function routeScenarios(
  url: string,
  revealToken: string,
  sessions: readonly Session[],
  proofs: readonly Proof[],
): Record<Route, Scenario> {
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    new Request(`${url}${path}`, {
      method: "POST",
      headers: { ...jsonHeaders, ...headers },
      body: JSON.stringify(body),
    });
  const auth = (w: number) => ({ authorization: `Bearer ${sessions[w].accessToken}` });
  // What ends every value creator w saves, so its masked hint and its reveal name their owner.
  const tag = (w: number) => `w${String(w).padStart(3, "0")}`;
  let nextProof = 0;
  return {
    nonce: () => ({
      request: post("/api/auth/nonce", {}),
      ok: (status, body) => status === 200 && typeof body.nonce === "string",
    }),
    "wallet-proof": () => {
      const proof = proofs[nextProof++];
      if (proof === undefined) return null;
      const { address, ...sent } = proof;
      return {
        request: post("/api/auth/wallet-proof", sent),
        ok: (status, body) =>
          status === 200 && typeof body.access_token === "string" &&
          body.user?.wallet_address?.toLowerCase() === address.toLowerCase(),
      };
    },
    list: (w) => ({
      request: new Request(`${url}/api/secrets`, { headers: auth(w) }),
      ok: (status, body) =>
        status === 200 && body.secrets?.length === 7 &&
        body.secrets.every((s: Body) => s.hint === `…${tag(w)}`),
    }),
    put: (w, i) => {
      const secretType = SECRET_TYPES[i % SECRET_TYPES.length];
      const value = `sk-bench-${i}-${crypto.randomUUID()}-${tag(w)}`;
      return {
        request: new Request(`${url}/api/secrets`, {
          method: "PUT",
          headers: { ...auth(w), ...jsonHeaders },
          body: JSON.stringify({ secretType, value }),
        }),
        ok: (status, body) => status === 200 && body.secretType === secretType,
      };
    },
    reveal: (w) => ({
      request: post("/api/secrets/reveal", {}, {
        ...auth(w),
        "x-service-server-secret": revealToken,
      }),
      ok: (status, body) =>
        status === 200 && body.secrets?.length === 7 &&
        body.secrets.every((s: Body) => typeof s.value === "string" && s.value.endsWith(tag(w))),
    }),
  };
}

/**
 * A page of creator 0's activity after `cursor` (the first page when null): 50 events, every one
 * older than the one before.
 */
export function activityScenario(url: string, session: Session, cursor: string | null): Scenario {
  const query = cursor === null ? "" : `?cursor=${cursor}`;
  return () => ({
    request: new Request(`${url}/api/secrets/activity${query}`, {
      headers: { authorization: `Bearer ${session.accessToken}` },
    }),
    ok: (status, body) =>
      status === 200 && body.events?.length === 50 &&
      body.events.every((e: Body, i: number) => i === 0 || e.at <= body.events[i - 1].at),
  });
}

/** Whose rows the floors use: the writes' must not be the reads', since they store random bytes. */
export interface FloorUsers {
  /** Creators whose rows hold real ciphertexts (the routes' own): the reveal floor decrypts them. */
  readonly readers: readonly string[];
  /** Creators of the floor's own, whose rows its writes overwrite. */
  readonly writers: readonly string[];
}

/** Each route's floor on the floor server (bench/floor-server.ts), for worker w's creator. */
export function floorScenarios(
  url: string,
  { readers, writers }: FloorUsers,
): Record<Route, Scenario> {
  // The reveal's floor is sent the route's body (routeScenarios' reveal), the list's none.
  const read = (path: string, method: string, body: string | null = null): Scenario => (w) => ({
    request: new Request(`${url}${path}?user=${readers[w]}`, {
      method,
      ...(body !== null && { headers: jsonHeaders, body }),
    }),
    ok: (status, body) => status === 200 && body.secrets?.length === 7,
  });
  const write = (flush: string, sent = false): Scenario => (w, i) => {
    const secretType = SECRET_TYPES[i % SECRET_TYPES.length];
    // What the PUT route is sent (routeScenarios' put), for the floor to read and encrypt.
    const body = sent ? { secretType, value: `sk-bench-${i}-${crypto.randomUUID()}` } : null;
    return {
      request: new Request(`${url}/?user=${writers[w]}&type=${secretType}${flush}`, {
        method: "PUT",
        ...(body && { headers: jsonHeaders, body: JSON.stringify(body) }),
      }),
      ok: (status, body) => status === 200 && typeof body.updatedAt === "string",
    };
  };
  return {
    nonce: write("&flush=off"),
    "wallet-proof": write(""),
    list: read("/", "GET"),
    put: write("", true),
    reveal: read("/reveal", "POST", "{}"),
  };
}
