/**
 * `deno task load`: many creators at once, each signing in with its wallet and reading and writing
 * its own secrets against the local server (its own process, loopback only, a fresh database), for
 * a fixed time and at most a fixed number of requests. Reports throughput and errors, and fails
 * (exit code 1) on any of:
 *   - a 5xx answer;
 *   - a cross-creator answer: a revealed value, a sign-in, a listed type or a listed hint that is
 *     not the creator's own;
 *   - an acknowledged PUT (200) that is not what reveal returns afterwards.
 *
 * Knobs: LOAD_CREATORS (40), LOAD_DURATION_MS (20000), LOAD_MAX_REQUESTS (200000),
 * LOAD_ENGINES ("postgres,pglite"; postgres when DATABASE_URL is set or one answers on 5432).
 */
import { SECRET_TYPES, type SecretType } from "../functions/_shared/vault/secret-types.ts";
import { serverEnv, type ServerProcess, startServer } from "./processes.ts";
import { createDatabase, type Engine, findPostgres, newAccount, percentile } from "./support.ts";

const CREATORS = Number(Deno.env.get("LOAD_CREATORS") ?? 40);
const DURATION_MS = Number(Deno.env.get("LOAD_DURATION_MS") ?? 20_000);
const MAX_REQUESTS = Number(Deno.env.get("LOAD_MAX_REQUESTS") ?? 200_000);

type Op = "nonce" | "wallet-proof" | "list" | "put" | "reveal";

interface Stats {
  requests: number;
  latencies: Record<Op, number[]>;
  statuses: Record<string, number>;
  violations: string[];
}

class Creator {
  readonly account = newAccount();
  static #created = 0;
  readonly prefix = `load-${crypto.randomUUID().slice(0, 8)}`;
  /** Every value this creator saves ends with it, so the masked hint a list shows names the owner. */
  readonly tag = (Creator.#created++).toString(36).padStart(4, "0");
  userId: string | null = null;
  token: string | null = null;
  /** Per type: the last value answered 200, and values sent since whose answer was not 200. */
  readonly acknowledged = new Map<SecretType, string>();
  readonly unknown = new Map<SecretType, string[]>();
  #seq = 0;

  constructor(readonly server: ServerProcess, readonly stats: Stats) {}

  async #send(op: Op, request: Request): Promise<{ status: number; body: unknown }> {
    const started = performance.now();
    let status = 0;
    let body: unknown = null;
    try {
      const response = await fetch(request);
      status = response.status;
      const text = await response.text();
      body = text === "" ? null : JSON.parse(text);
    } catch (error) {
      this.stats.violations.push(`${op}: the request failed: ${(error as Error).message}`);
    }
    this.stats.latencies[op].push(performance.now() - started);
    this.stats.requests++;
    const key = `${op} ${status}`;
    this.stats.statuses[key] = (this.stats.statuses[key] ?? 0) + 1;
    if (status >= 500) this.stats.violations.push(`${op}: ${status} ${JSON.stringify(body)}`);
    return { status, body };
  }

  async signIn(): Promise<void> {
    const url = this.server.url;
    const nonce = await this.#send(
      "nonce",
      new Request(`${url}/api/auth/nonce`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ address: this.account.address }),
      }),
    );
    if (nonce.status !== 200) return;
    const message = (nonce.body as { message: string }).message;
    const proof = { message, signature: await this.account.signMessage({ message }) };
    const { status, body } = await this.#send(
      "wallet-proof",
      new Request(`${url}/api/auth/wallet-proof`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(proof),
      }),
    );
    if (status !== 200) return;
    const answer = body as { access_token: string; user: { id: string; wallet_address: string } };
    if (answer.user.wallet_address.toLowerCase() !== this.account.address.toLowerCase()) {
      this.stats.violations.push(`wallet-proof answered for another wallet`);
    }
    if (this.userId !== null && answer.user.id !== this.userId) {
      this.stats.violations.push(`wallet-proof: the same wallet became another creator`);
    }
    this.userId = answer.user.id;
    this.token = answer.access_token;
  }

  #auth(extra: Record<string, string> = {}) {
    return { authorization: `Bearer ${this.token}`, ...extra };
  }

  async put(): Promise<void> {
    const secretType = SECRET_TYPES[Math.floor(Math.random() * SECRET_TYPES.length)];
    const value = `${this.prefix}-${secretType}-${++this.#seq}-${crypto.randomUUID()}-${this.tag}`;
    const { status } = await this.#send(
      "put",
      new Request(`${this.server.url}/api/secrets`, {
        method: "PUT",
        headers: this.#auth({ "content-type": "application/json" }),
        body: JSON.stringify({ secretType, value }),
      }),
    );
    if (status === 200) {
      this.acknowledged.set(secretType, value);
      this.unknown.set(secretType, []);
    } else {
      this.unknown.set(secretType, [...(this.unknown.get(secretType) ?? []), value]);
    }
  }

  async list(): Promise<void> {
    const { status, body } = await this.#send(
      "list",
      new Request(`${this.server.url}/api/secrets`, { headers: this.#auth() }),
    );
    if (status !== 200) return;
    const { secrets } = body as { secrets: { secretType: SecretType; hint?: string }[] };
    for (const { secretType, hint } of secrets) {
      if (!this.acknowledged.has(secretType) && !this.unknown.get(secretType)?.length) {
        this.stats.violations.push(`list shows a ${secretType} this creator never wrote`);
      }
      if (hint !== `…${this.tag}`) {
        this.stats.violations.push(`list shows a ${secretType} whose hint is not this creator's`);
      }
    }
  }

  async reveal(): Promise<Map<SecretType, string> | null> {
    const { status, body } = await this.#send(
      "reveal",
      new Request(`${this.server.url}/api/secrets/reveal`, {
        method: "POST",
        headers: this.#auth({
          "content-type": "application/json",
          "x-service-server-secret": this.server.env.SERVER_REVEAL_TOKEN,
        }),
        body: "{}",
      }),
    );
    if (status !== 200) return null;
    const values = new Map<SecretType, string>();
    for (
      const { secretType, value } of (body as {
        secrets: { secretType: SecretType; value: string }[];
      }).secrets
    ) {
      if (!value.startsWith(`${this.prefix}-${secretType}-`)) {
        this.stats.violations.push(`reveal returned a value this creator never wrote`);
      }
      values.set(secretType, value);
    }
    return values;
  }

  /** After the run: every acknowledged PUT is what reveal returns (or a later, unanswered one). */
  async verifyDurable(): Promise<void> {
    const values = await this.reveal();
    if (values === null) {
      this.stats.violations.push("the final reveal failed");
      return;
    }
    for (const [secretType, value] of this.acknowledged) {
      const stored = values.get(secretType);
      if (stored !== value && !(this.unknown.get(secretType) ?? []).includes(stored!)) {
        this.stats.violations.push(`an acknowledged ${secretType} was not readable afterwards`);
      }
    }
  }
}

async function loadEngine(engine: Engine, adminUrl: string | null) {
  const db = await createDatabase(engine, adminUrl);
  const server = await startServer(serverEnv(db.env));
  const stats: Stats = {
    requests: 0,
    latencies: { nonce: [], "wallet-proof": [], list: [], put: [], reveal: [] },
    statuses: {},
    violations: [],
  };
  try {
    const creators = Array.from({ length: CREATORS }, () => new Creator(server, stats));
    const start = performance.now();
    const stopAt = start + DURATION_MS;
    await Promise.all(creators.map(async (creator) => {
      await creator.signIn();
      while (performance.now() < stopAt && stats.requests < MAX_REQUESTS) {
        const roll = Math.random();
        if (creator.token === null || roll < 0.04) await creator.signIn(); // a new session
        else if (roll < 0.45) await creator.put();
        else if (roll < 0.8) await creator.list();
        else await creator.reveal();
      }
    }));
    const seconds = (performance.now() - start) / 1000;
    const total = stats.requests;
    await Promise.all(creators.map((creator) => creator.verifyDurable()));
    const acknowledged = creators.reduce((n, c) => n + c.acknowledged.size, 0);
    return { engine, seconds, total, stats, acknowledged };
  } finally {
    await server.stop();
    await db.drop();
  }
}

const wanted = (Deno.env.get("LOAD_ENGINES") ?? "postgres,pglite").split(",");
const adminUrl = wanted.includes("postgres") ? await findPostgres() : null;
const engines = wanted.filter((e): e is Engine =>
  (e === "postgres" && adminUrl !== null) || e === "pglite"
);
if (wanted.includes("postgres") && adminUrl === null) {
  console.log("PostgreSQL: skipped (no DATABASE_URL and nothing answers on 127.0.0.1:5432)");
}

let failed = false;
for (const engine of engines) {
  console.log(
    `${engine}: ${CREATORS} creators for ${
      DURATION_MS / 1000
    } s (at most ${MAX_REQUESTS} requests)`,
  );
  const { seconds, total, stats, acknowledged } = await loadEngine(engine, adminUrl);
  console.log(
    `  ${total} requests in ${seconds.toFixed(1)} s: ${(total / seconds).toFixed(0)} req/s`,
  );
  console.log(
    `  ${"op".padEnd(14)}${"count".padStart(8)}${"p50 ms".padStart(9)}${"p99 ms".padStart(9)}`,
  );
  for (const [op, samples] of Object.entries(stats.latencies)) {
    const sorted = [...samples].sort((a, b) => a - b);
    console.log(
      `  ${op.padEnd(14)}${String(sorted.length).padStart(8)}${
        percentile(sorted, 50).toFixed(2).padStart(9)
      }${percentile(sorted, 99).toFixed(2).padStart(9)}`,
    );
  }
  const errors = Object.entries(stats.statuses).filter(([key]) => !/ 2\d\d$/.test(key));
  console.log(
    `  answers: ${Object.entries(stats.statuses).map(([k, n]) => `${k} x${n}`).join(", ")}`,
  );
  console.log(`  errors (non-2xx): ${errors.reduce((n, [, c]) => n + c, 0)}`);
  console.log(`  acknowledged (creator, type) pairs checked after the run: ${acknowledged}`);
  const fiveHundreds = Object.entries(stats.statuses)
    .filter(([key]) => / 5\d\d$/.test(key)).reduce((n, [, c]) => n + c, 0);
  console.log(`  5xx: ${fiveHundreds}; violations: ${stats.violations.length}`);
  for (const violation of [...new Set(stats.violations)].slice(0, 20)) {
    console.log(`    VIOLATION ${violation}`);
  }
  if (stats.violations.length > 0) failed = true;
}
if (failed) {
  console.log("FAILED: the invariants above were violated");
  Deno.exit(1);
}
console.log("ok: no 5xx, no cross-creator answer, every acknowledged PUT readable afterwards");
