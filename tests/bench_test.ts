/**
 * The bench's honesty: a child sees only the environment meant for it, each floor sends the one
 * statement its label names, a route and its floor take turns without overlapping, the deployed
 * function must reach Postgres through the pooler, a row meets its target only by its median and
 * without errors (its own or its floor's), bench/README.md
 * is what the committed result renders to, and the bench itself runs: a smoke run on PGlite (and,
 * with DATABASE_URL and PgBouncer, on the deployed shape) whose every request passed its check.
 */
import assert from "node:assert/strict";
import type { Database, Row, Statement } from "../functions/_shared/db/db.ts";
import { createKeyring } from "../functions/_shared/vault/vault-crypto.ts";
import { SECRET_TYPES } from "../protocol/secret-types.ts";
import { peerPorts, poolerProblem } from "../bench/engines.ts";
import { runInTurns, type Scenario, TURN_MS } from "../bench/measure.ts";
import { floorHandler, UPSERT, WITHOUT_FLUSH } from "../bench/floor-server.ts";
import { renderReadme } from "../bench/report.ts";
import type { Results } from "../bench/results.ts";
import { childEnv, INHERITED_ENV } from "../bench/support.ts";
import { findPgBouncer } from "./support/pgbouncer.ts";
import { benchResults, listRow, spread } from "./support/bench-results.ts";
import { openTestDatabase } from "./support/database.ts";

const ROOT = new URL("../", import.meta.url);

Deno.test("a bench child's environment holds Deno's basics and what it is given, nothing else of the parent's", () => {
  const saved = Deno.env.get("DATABASE_URL");
  Deno.env.set("DATABASE_URL", "postgres://postgres@127.0.0.1:1/not-for-the-child");
  try {
    const env = childEnv({ PGLITE_DATA_DIR: "/tmp/x" });
    assert.equal(env.DATABASE_URL, undefined);
    assert.equal(env.PATH, Deno.env.get("PATH"));
    const allowed = new Set([...INHERITED_ENV, "PGLITE_DATA_DIR"]);
    assert.deepEqual(Object.keys(env).filter((name) => !allowed.has(name)), []);
  } finally {
    if (saved === undefined) Deno.env.delete("DATABASE_URL");
    else Deno.env.set("DATABASE_URL", saved);
  }
});

/** `db`, noting the statement texts of every call: one list per round the driver sends. */
function recording(db: Database, sent: string[][]): Database {
  return {
    ...db,
    query<T extends Row>(text: string, params?: readonly unknown[]) {
      sent.push([text]);
      return db.query<T>(text, params);
    },
    batch(statements: readonly Statement[]) {
      sent.push(statements.map((statement) => statement.text));
      return db.batch(statements);
    },
    queryOverlappingCommit(statement, use) {
      sent.push([statement.text]);
      return db.queryOverlappingCommit(statement, use);
    },
  };
}

Deno.test("each floor sends the one statement its label names: reveal's commits one audit row and decrypts every value, PUT's stores its body's value encrypted, the nonce's skips the flush wait", async () => {
  const { db, close } = await openTestDatabase("pglite");
  try {
    const [{ id: user }] = await db.query<{ id: string }>(
      `insert into public.wallet_users (wallet_address) values ('0x' || repeat('ab', 20)) returning id`,
    );
    const keyring = createKeyring([{ id: "k1", key: crypto.getRandomValues(new Uint8Array(32)) }]);
    for (const secretType of SECRET_TYPES) {
      const sealed = keyring.encrypt(`sk-${secretType}`, { userId: user, secretType });
      await db.query(
        `insert into public.user_secrets (user_id, secret_type, ciphertext, iv, key_id, hint)
           values ($1, $2, $3, $4, $5, '…abcd')`,
        [user, secretType, sealed.ciphertext, sealed.iv, sealed.keyId],
      );
    }
    const sent: string[][] = [];
    const floor = floorHandler(recording(db, sent), keyring);
    const ask = async (method: string, path: string, body?: unknown) => {
      const sentBody = body === undefined ? null : JSON.stringify(body);
      const response = await floor(new Request(`http://floor${path}`, { method, body: sentBody }));
      assert.equal(response.status, 200);
      return await response.json();
    };

    assert.equal((await ask("GET", `/?user=${user}`)).secrets.length, 7);
    assert.equal(sent.splice(0).length, 1);
    const revealed = (await ask("POST", `/reveal?user=${user}`, {})).secrets;
    const values = revealed.map((secret: { value: string }) => secret.value);
    assert.deepEqual(values.sort(), SECRET_TYPES.map((type) => `sk-${type}`).sort());
    assert.equal(sent.splice(0).length, 1, "the read and the audit row in one statement");
    const events = await db.query<{ secret_types: string[] }>(
      "select secret_types from public.secret_events where user_id = $1 and action = 'reveal'",
      [user],
    );
    assert.deepEqual(events.map((event) => event.secret_types), [[...SECRET_TYPES]]);

    await ask("PUT", `/?user=${user}&type=${SECRET_TYPES[0]}`);
    assert.deepEqual(sent.splice(0), [[UPSERT]]);
    // With the route's body, the value is stored encrypted as the vault stores it.
    const secretType = SECRET_TYPES[1];
    await ask("PUT", `/?user=${user}&type=${secretType}`, { secretType, value: "sk-put-floor" });
    assert.deepEqual(sent.splice(0), [[UPSERT]]);
    const [stored] = await db.query<{ ciphertext: Uint8Array; iv: Uint8Array; key_id: string }>(
      "select ciphertext, iv, key_id from public.user_secrets where user_id = $1 and secret_type = $2",
      [user, secretType],
    );
    const sealed = { ciphertext: stored.ciphertext, iv: stored.iv, keyId: stored.key_id };
    assert.equal(keyring.decrypt(sealed, { userId: user, secretType }), "sk-put-floor");
    await ask("PUT", `/?user=${user}&type=${SECRET_TYPES[0]}&flush=off`);
    assert.deepEqual(sent.splice(0), [[WITHOUT_FLUSH, UPSERT]]);
  } finally {
    await close();
  }
});

Deno.test("a route and its floor take turns, each alone at its concurrency, each for the whole duration, and every answer is checked", async () => {
  // Each server notes when it began and ended each request, and how many of its own were in flight.
  const spans: { server: string; from: number; to: number }[] = [];
  let inFlight = 0;
  let mostInFlight = 0;
  const serve = (server: string) =>
    Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
      const from = performance.now();
      mostInFlight = Math.max(mostInFlight, ++inFlight);
      await new Promise((resolve) => setTimeout(resolve, 2));
      inFlight--;
      spans.push({ server, from, to: performance.now() });
      return Response.json({ server, bad: new URL(request.url).searchParams.has("bad") });
    });
  const route = serve("route");
  const floor = serve("floor");
  const scenario = (server: Deno.HttpServer<Deno.NetAddr>, badEvery = 0): Scenario => (_, i) => ({
    request: new Request(
      `http://127.0.0.1:${server.addr.port}/${badEvery && i % badEvery === 0 ? "?bad" : ""}`,
    ),
    ok: (status, body) => status === 200 && body.bad === false,
  });
  try {
    const started = performance.now();
    const [routeLoad, floorLoad] = await runInTurns(3, 3 * TURN_MS, [
      { what: "", scenario: scenario(route), warmupMs: 50 },
      { what: "", scenario: scenario(floor, 10), warmupMs: 50 },
    ]);
    const took = performance.now() - started;
    assert.ok(
      took >= 6 * TURN_MS + 100,
      `both ran for the whole duration (${Math.round(took)} ms)`,
    );
    assert.equal(mostInFlight, 3, "at the concurrency given, never both servers at once");
    const sorted = spans.toSorted((a, b) => a.from - b.from);
    const switches = sorted.filter((span, i) => i > 0 && span.server !== sorted[i - 1].server);
    assert.equal(switches.length, 7, "warm-ups, then three turns each");
    for (const next of switches) {
      const before = sorted.filter((span) => span.from < next.from && span.server !== next.server);
      assert.ok(before.every((span) => span.to <= next.from), "a turn starts once the last ended");
    }
    assert.equal(routeLoad.errors, 0);
    assert.ok(floorLoad.errors > 0, "the floor's failed checks are counted");
    assert.ok(routeLoad.requests > 100 && floorLoad.requests > 100);
  } finally {
    await route.shutdown();
    await floor.shutdown();
  }
});

Deno.test("the deployed function must reach the database through the pooler, and none of its sockets straight", () => {
  const ss = [
    '0      0      127.0.0.1:40952 127.0.0.1:6432  users:(("deno",pid=101,fd=31))',
    '0      0      127.0.0.1:40984 127.0.0.1:5432  users:(("deno",pid=202,fd=3))',
    '0      0      [::1]:40990     [::1]:5432      users:(("deno",pid=101,fd=9),("deno",pid=303,fd=9))',
  ].join("\n");
  assert.deepEqual(peerPorts(ss, [101]), [6432, 5432]);
  assert.deepEqual(peerPorts(ss, [303]), [5432]);
  assert.equal(poolerProblem([6432], 6432, 5432), null);
  assert.match(poolerProblem([6432, 5432], 6432, 5432)!, /connects straight to the database/);
  assert.match(poolerProblem([], 6432, 5432)!, /holds no connection to the pooler/);
  assert.match(poolerProblem([5432], 5432, 5432)!, /is given no pooler/);
});

Deno.test("a target is met by the median ratio alone, and a row with errors, its own or its floor's, misses it", () => {
  const text = renderReadme(benchResults([
    listRow("postgres", spread(1.45, 1.3, 1.7), spread(1.9)),
    listRow("pglite", spread(1.62, 1.5, 1.8), spread(3.5)),
  ]));
  assert.match(
    text,
    /\| postgres \| GET [^|]+\| 1\.45 \/ 1\.00 \| 1\.45× \(1\.30–1\.70\) \| yes \(≤ 1\.5×\) \|/,
  );
  assert.match(text, /\| pglite \| GET [^|]+\|[^|]+\| 1\.62× \(1\.50–1\.80\) \| not targeted \|/);
  const missed = renderReadme(
    benchResults([listRow("postgres", spread(1.62, 1.2, 1.7), spread(3.1))]),
  );
  assert.match(
    missed,
    /1\.62× \(1\.20–1\.70\) \| \*\*no\*\* \(≤ 1\.5×\) \|.*3\.10× \| \*\*no\*\* \(≤ 3×\) \|/,
  );
  for (
    const [fields, said] of [[{ errors: 3 }, "3 errors"], [
      { floorErrors: 2 },
      "floor: 2 errors",
    ]] as const
  ) {
    const failing = renderReadme(
      benchResults([listRow("postgres", spread(0.2), spread(0.2), fields)]),
    );
    assert.match(failing, new RegExp(`0\\.20× \\| \\*\\*no\\*\\* \\(${said}\\) \\|`));
  }
});

Deno.test("the trail's growth rows hold the list at each length to its own p50 at 0 events", () => {
  const row = (events: number, route: "list" | "activity" | "reveal", p50: number, errors = 0) => ({
    engine: "postgres",
    events,
    route,
    p50Ms: spread(p50),
    errors,
  });
  const text = renderReadme(benchResults([], {
    trail: [
      row(0, "list", 1),
      row(0, "activity", 2),
      row(0, "reveal", 3),
      row(100_000, "list", 1.1),
      row(100_000, "activity", 2),
      row(100_000, "reveal", 3, 4),
      row(1_000_000, "list", 1.5),
    ],
  }));
  assert.match(text, /\| postgres \|\s+0 \|\s+1\.00 \|\s+2\.00 \|\s+3\.00 \|\s+— \|/);
  assert.match(text, /\| 100,000 \|[^\n]*3\.00 \(\*\*4 errors\*\*\) \| 1\.10× yes \(≤ 1\.2×\) \|/);
  assert.match(text, /\| 1,000,000 \|\s+1\.50 \|\s+— \|\s+— \| 1\.50× \*\*no\*\* \(≤ 1\.2×\) \|/);
});

/** `text` as `deno fmt` writes Markdown. */
async function formatted(text: string): Promise<string> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--ext", "md", "-"],
    cwd: ROOT.pathname,
    stdin: "piped",
    stdout: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(text));
  await writer.close();
  return new TextDecoder().decode((await child.output()).stdout);
}

Deno.test("bench/README.md is what the committed result renders to, and that result is a few KB", async () => {
  const latest = new URL("bench/results/latest.json", ROOT);
  assert.ok((await Deno.stat(latest)).size < 16_000);
  const results: Results = JSON.parse(await Deno.readTextFile(latest));
  const readme = await Deno.readTextFile(new URL("bench/README.md", ROOT));
  assert.equal(readme, await formatted(renderReadme(results)));
});

/** Runs bench/run.ts small with the permissions `deno task bench` gives it; its results. */
async function smokeRun(env: Record<string, string>): Promise<Results> {
  const out = await Deno.makeTempFile({ suffix: ".json" });
  try {
    const run = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "bench/run.ts"],
      cwd: ROOT.pathname,
      env: {
        BENCH_RUNS: "1",
        BENCH_CONCURRENCY: "2",
        BENCH_DURATION_MS: "200",
        BENCH_SINGLE_MS: "200",
        BENCH_GROWTH: "1,20",
        BENCH_GROWTH_MS: "200",
        BENCH_TRAIL: "200",
        BENCH_COLD_STARTS: "1",
        BENCH_OUT: out,
        ...env,
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(run.code, 0, new TextDecoder().decode(run.stderr).slice(-3000));
    return JSON.parse(await Deno.readTextFile(out));
  } finally {
    await Deno.remove(out);
  }
}

/**
 * Every route, growth and trail step of `engine` was measured, and every answer passed its check.
 */
function assertEveryCheckPassed(results: Results, engine: string) {
  const rows = results.routes.filter((row) => row.engine === engine);
  assert.deepEqual(rows.map((row) => row.route), [
    "nonce",
    "wallet-proof",
    "list",
    "put",
    "reveal",
  ]);
  for (const row of rows) {
    assert.deepEqual([row.errors, row.floorErrors], [0, 0], `${engine} ${row.route}`);
    for (const pair of [row.at1, row.loaded]) assert.ok(pair.ratio !== null && pair.ratio[0] > 0);
  }
  const growth = results.growth.filter((g) => g.engine === engine);
  assert.deepEqual(growth.map((g) => `${g.creators} ${g.route} ${g.errors}`), [
    "1 list 0",
    "1 put 0",
    "1 wallet-proof 0",
    "20 list 0",
    "20 put 0",
    "20 wallet-proof 0",
  ]);
  const trail = (results.trail ?? []).filter((t) => t.engine === engine);
  assert.deepEqual(trail.map((t) => `${t.events} ${t.route} ${t.errors}`), [
    "0 list 0",
    "0 activity 0",
    "0 reveal 0",
    "200 list 0",
    "200 activity 0",
    "200 reveal 0",
  ]);
}

Deno.test({
  name:
    "a smoke run on PGlite measures every route and floor with every answer checked, though the bench's own DATABASE_URL names a Postgres",
  sanitizeResources: false,
  async fn() {
    // A Postgres the bench finds nowhere: the PGlite server must not inherit it.
    const results = await smokeRun({
      BENCH_ENGINES: "pglite",
      DATABASE_URL: "postgres://postgres@127.0.0.1:1/nowhere",
    });
    assert.deepEqual(results.meta.engines, [{ name: "pglite", targeted: false }]);
    assertEveryCheckPassed(results, "pglite");
    assert.equal(results.coldStart, null);
    assert.match(renderReadme(results), /\| pglite \| PUT \/api\/secrets \|[^\n]*not targeted \|/);
  },
});

const databaseUrl = Deno.env.get("DATABASE_URL");
const pgbouncer = await findPgBouncer();

Deno.test({
  name:
    "a smoke run on the deployed shape passes its pooler and role checks, every answer checked, with cold starts on the hosted runtime's Deno",
  ignore: !databaseUrl || "missing" in pgbouncer,
  sanitizeResources: false,
  async fn() {
    const results = await smokeRun({ BENCH_ENGINES: "deployed", DATABASE_URL: databaseUrl! });
    assertEveryCheckPassed(results, "deployed");
    if (results.coldStart === null) {
      assert.match(results.meta.skipped.join("\n"), /cold start: Deno 2\.1\.4 is not installed/);
    } else {
      assert.deepEqual(results.coldStart.functions.map((fn) => fn.name), [
        "wallet-proof",
        "user-secrets",
        "api",
      ]);
      assert.ok(results.coldStart.functions.every((fn) => fn.ratio !== null && fn.ratio[0] > 1));
    }
  },
});
