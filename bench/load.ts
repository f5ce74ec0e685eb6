/**
 * `deno task load`: many creators at once, each signing in with its wallet and reading and writing
 * its own secrets against the local server (its own process, a fresh database), for a fixed time.
 * Fails (exit 1) on any 5xx; on any cross-creator answer (a sign-in, listed type or hint, or
 * revealed value that is not the creator's own); on an acknowledged PUT that reveal does not
 * return afterwards.
 *
 * Knobs: LOAD_CREATORS (40), LOAD_DURATION_MS (20000), LOAD_MAX_REQUESTS (200000),
 * LOAD_ENGINES (postgres,pglite; postgres when DATABASE_URL is set or one answers on 5432).
 */
import { SECRET_TYPES } from "../protocol/secret-types.ts";
import {
  benchCredential,
  createDatabase,
  findPostgres,
  jsonHeaders,
  newAccount,
  percentile,
  serverEnv,
  startProcess,
} from "./support.ts";

const CREATORS = Number(Deno.env.get("LOAD_CREATORS") ?? 40);
const DURATION_MS = Number(Deno.env.get("LOAD_DURATION_MS") ?? 20_000);
const MAX_REQUESTS = Number(Deno.env.get("LOAD_MAX_REQUESTS") ?? 200_000);

// deno-lint-ignore no-explicit-any
type Body = any;

async function loadEngine(engine: string, adminUrl: string | null) {
  const db = await createDatabase(engine === "postgres" ? adminUrl : null);
  const storage = `${engine}:public.user_secrets`;
  const credential = await benchCredential(db);
  const server = await startProcess("server/main.ts", { ...serverEnv(), ...db.env }, storage);
  const latencies: Record<string, number[]> = {};
  const answers: Record<string, number> = {};
  const violations: string[] = [];
  let requests = 0;
  const send = async (op: string, path: string, init: RequestInit & { json?: unknown } = {}) => {
    if ("json" in init) {
      const headers = { ...jsonHeaders, ...init.headers };
      init = { method: "POST", ...init, headers, body: JSON.stringify(init.json) };
    }
    const started = performance.now();
    let status = 0;
    let body: Body = null;
    try {
      const response = await fetch(`${server.url}${path}`, init);
      status = response.status;
      const text = await response.text();
      body = text === "" ? null : JSON.parse(text);
    } catch (error) {
      violations.push(`${op}: the request failed: ${(error as Error).message}`);
    }
    (latencies[op] ??= []).push(performance.now() - started);
    requests++;
    answers[`${op} ${status}`] = (answers[`${op} ${status}`] ?? 0) + 1;
    if (status >= 500) violations.push(`${op}: ${status} ${JSON.stringify(body)}`);
    return { status, body };
  };

  /** One creator's session of random work; resolves to its check of what stayed stored. */
  const creator = async (n: number, stopAt: number) => {
    const account = newAccount();
    // Every value ends with the tag, so the masked hint a list shows names its owner.
    const tag = n.toString(36).padStart(4, "0");
    const prefix = `load-${crypto.randomUUID().slice(0, 8)}`;
    const acknowledged = new Map<string, string>();
    const unanswered = new Map<string, string[]>();
    let token: string | null = null;
    let userId: string | null = null;
    let seq = 0;
    const auth = () => ({ authorization: `Bearer ${token}` });
    const signIn = async () => {
      const nonce = await send("nonce", "/api/auth/nonce", { json: { address: account.address } });
      if (nonce.status !== 200) return;
      const message = nonce.body.message;
      const proof = { message, signature: await account.signMessage({ message }) };
      const signed = await send("wallet-proof", "/api/auth/wallet-proof", { json: proof });
      if (signed.status !== 200) return;
      if (signed.body.user.wallet_address.toLowerCase() !== account.address.toLowerCase()) {
        violations.push("wallet-proof answered for another wallet");
      }
      if (userId !== null && signed.body.user.id !== userId) {
        violations.push("wallet-proof: the same wallet became another creator");
      }
      userId = signed.body.user.id;
      token = signed.body.access_token;
    };
    const put = async () => {
      const secretType = SECRET_TYPES[Math.floor(Math.random() * SECRET_TYPES.length)];
      const value = `${prefix}-${secretType}-${++seq}-${crypto.randomUUID()}-${tag}`;
      const init = { method: "PUT", headers: auth(), json: { secretType, value } };
      const { status } = await send("put", "/api/secrets", init);
      if (status === 200) {
        acknowledged.set(secretType, value);
        unanswered.set(secretType, []);
      } else unanswered.set(secretType, [...(unanswered.get(secretType) ?? []), value]);
    };
    const list = async () => {
      const { status, body } = await send("list", "/api/secrets", { headers: auth() });
      for (const { secretType, hint } of status === 200 ? body.secrets : []) {
        if (!acknowledged.has(secretType) && !unanswered.get(secretType)?.length) {
          violations.push(`list shows a ${secretType} this creator never wrote`);
        }
        if (hint !== `…${tag}`) violations.push(`list shows a ${secretType} hint not theirs`);
      }
    };
    const reveal = async () => {
      const { status, body } = await send("reveal", "/api/secrets/reveal", {
        headers: { ...auth(), "x-service-server-secret": credential },
        json: {},
      });
      if (status !== 200) return null;
      const values = new Map<string, string>();
      for (const { secretType, value } of body.secrets) {
        if (!value.startsWith(`${prefix}-${secretType}-`)) {
          violations.push("reveal returned a value this creator never wrote");
        }
        values.set(secretType, value);
      }
      return values;
    };
    await signIn();
    while (performance.now() < stopAt && requests < MAX_REQUESTS) {
      const roll = Math.random();
      if (token === null || roll < 0.04) await signIn(); // a new session
      else if (roll < 0.45) await put();
      else if (roll < 0.8) await list();
      else await reveal();
    }
    return async () => {
      const values = await reveal();
      if (values === null) {
        violations.push("the final reveal failed");
        return 0;
      }
      for (const [secretType, value] of acknowledged) {
        const stored = values.get(secretType)!;
        if (stored !== value && !unanswered.get(secretType)?.includes(stored)) {
          violations.push(`an acknowledged ${secretType} was not readable afterwards`);
        }
      }
      return acknowledged.size;
    };
  };

  try {
    const started = performance.now();
    const checks = await Promise.all(
      Array.from({ length: CREATORS }, (_, n) => creator(n, started + DURATION_MS)),
    );
    const seconds = (performance.now() - started) / 1000;
    const total = requests;
    const checked = (await Promise.all(checks.map((check) => check()))).reduce((a, b) => a + b);
    return { seconds, total, latencies, answers, violations, checked };
  } finally {
    await server.stop();
    await db.drop();
  }
}

const wanted = (Deno.env.get("LOAD_ENGINES") ?? "postgres,pglite").split(",");
const adminUrl = wanted.includes("postgres") ? (await findPostgres())?.url ?? null : null;
if (wanted.includes("postgres") && adminUrl === null) {
  console.log("PostgreSQL: skipped (no DATABASE_URL and nothing answers on 127.0.0.1:5432)");
}
let failed = false;
for (const engine of wanted.filter((e) => e === "pglite" || (e === "postgres" && adminUrl))) {
  console.log(
    `${engine}: ${CREATORS} creators for ${DURATION_MS} ms, ${MAX_REQUESTS} requests at most`,
  );
  const run = await loadEngine(engine, adminUrl);
  const perSecond = (run.total / run.seconds).toFixed(0);
  console.log(`  ${run.total} requests in ${run.seconds.toFixed(1)} s: ${perSecond} req/s`);
  for (const [op, samples] of Object.entries(run.latencies)) {
    const p = (n: number) => percentile(samples.sort((a, b) => a - b), n).toFixed(2);
    console.log(`  ${op.padEnd(14)}${samples.length} requests, p50 ${p(50)} ms, p99 ${p(99)} ms`);
  }
  console.log(`  answers: ${Object.entries(run.answers).map(([k, n]) => `${k} x${n}`).join(", ")}`);
  console.log(`  acknowledged (creator, type) pairs checked after the run: ${run.checked}`);
  console.log(`  violations: ${run.violations.length}`);
  for (const violation of new Set(run.violations)) console.log(`    VIOLATION ${violation}`);
  failed ||= run.violations.length > 0;
}
if (failed) console.log("FAILED: the invariants above were violated");
else console.log("ok: no 5xx, no cross-creator answer, every acknowledged PUT readable afterwards");
if (failed) Deno.exit(1);
