/**
 * `deno task bench:profile`: where one request's time goes, route by route, on PostgreSQL. Each
 * layer a request passes through is timed on its own, in this process, one call at a time (the
 * median of many), from the bare query up to the full request over HTTP:
 *
 *   bare query (the floor's)  →  + transaction wrapper (BEGIN … COMMIT in one write)
 *   →  the service's call (check, role and claims, read under RLS)  →  the function's handler
 *   (token, parsing, crypto, JSON, router, CORS)  →  + the /api proxy hop (in-process)  →  + the
 *   edge wrapper (atEdge)  →  over HTTP (Deno.serve and a fetch client in this same process).
 *
 * The same HTTP path is timed for a bare handler doing only the floor's query, so "HTTP layer"
 * can be read off both. Needs a PostgreSQL (DATABASE_URL, or one on 127.0.0.1:5432); a fresh
 * database is created and dropped. Knobs: PROFILE_ROUNDS (5), PROFILE_CALLS per round (300),
 * PROFILE_OUT (bench/results/profile.json, which `deno task bench:report` adds to
 * bench/README.md; point it elsewhere for a trial run). Prints a table (µs, median per call).
 */
import { commit } from "./machine.ts";
import { createWhatIfs } from "./profile-what-ifs.ts";
import { listSteps, putSteps } from "./profile-secrets.ts";
import { CALLS, ROUNDS, setUp, type Step } from "./profile-setup.ts";
import { nonceSteps, walletProofSteps } from "./profile-sign-in.ts";
import { findPostgres } from "./support.ts";

const adminUrl = await findPostgres();
if (adminUrl === null) {
  console.error("bench/profile.ts needs a PostgreSQL (DATABASE_URL or 127.0.0.1:5432)");
  Deno.exit(1);
}
const profiled = await setUp(adminUrl);
const { bench, db, appServer, floorServer } = profiled;
await createWhatIfs(profiled);

// ---------------------------------------------------------------------------------------------

const results: Record<string, { name: string; us: number }[]> = {};

/** Times every step in rounds (interleaved, so a busy moment hits all alike); median µs per call. */
async function profile(route: string, steps: Step[]) {
  const samples = steps.map(() => [] as number[]);
  for (const step of steps) for (let i = 0; i < 50; i++) await step.run(i); // warm-up
  let i = 1000;
  for (let round = 0; round < ROUNDS; round++) {
    for (const [index, step] of steps.entries()) {
      for (let n = 0; n < CALLS; n++) {
        const t0 = performance.now();
        await step.run(i++);
        samples[index].push((performance.now() - t0) * 1000);
      }
    }
  }
  results[route] = steps.map((step, index) => {
    const sorted = samples[index].sort((a, b) => a - b);
    return { name: step.name, us: sorted[Math.floor(sorted.length / 2)] };
  });
  console.log(`\n${route}`);
  for (const { name, us } of results[route]) {
    console.log(`  ${us.toFixed(0).padStart(7)} µs  ${name}`);
  }
}

await profile("GET /api/secrets", listSteps(profiled));
await profile("PUT /api/secrets", putSteps(profiled));
await profile("POST /api/auth/nonce", nonceSteps(profiled));
await profile("POST /api/auth/wallet-proof", await walletProofSteps(profiled));

await Deno.writeTextFile(
  Deno.env.get("PROFILE_OUT") ?? new URL("results/profile.json", import.meta.url),
  JSON.stringify(
    {
      date: new Date().toISOString(),
      commit: await commit(),
      deno: Deno.version.deno,
      loadAverage: Deno.loadavg(),
      rounds: ROUNDS,
      calls: CALLS,
      results,
    },
    null,
    2,
  ) + "\n",
);
await appServer.shutdown();
await floorServer.shutdown();
await db.close();
await bench.drop();
