/**
 * Latency growth with the number of creators: one measuring creator at concurrency 1, the others
 * seeded in bulk between the steps.
 */
import { type BenchEngine, startChecked } from "./engines.ts";
import { serverEnv } from "./processes.ts";
import { proofPool, proofsFor, routes, workerSessions } from "./routes.ts";
import { GROWTH, GROWTH_MS, log } from "./settings.ts";
import type { Growth, RunResult } from "./summary.ts";
import { seedCreatorsSql } from "./support.ts";

export async function growthRun(engine: BenchEngine, result: RunResult) {
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
      const proofs = await proofPool(server, proofsFor(1, GROWTH_MS));
      const measured = await routes(engine, server, sessions, 1, GROWTH_MS, proofs, [
        "list",
        "put",
        "wallet-proof",
      ]);
      result.growth.push(...growthRows(engine.name, target, measured));
    }
  } finally {
    await server.stop();
    await db.drop();
  }
}

/**
 * One step's rows: each route's latency with its errors (a route that fails fast must not read as
 * faster), and whether wallet-proof's proofs ran out before the time was up.
 */
export function growthRows(
  engine: string,
  creators: number,
  { results, proofsRanOut }: Awaited<ReturnType<typeof routes>>,
): Growth[] {
  return Object.entries(results).map(([measure, measured]) => ({
    engine,
    creators,
    measure,
    p50Ms: measured.p50Ms,
    p99Ms: measured.p99Ms,
    rps: measured.rps,
    errors: measured.errors,
    ...(measure === "wallet-proof" && proofsRanOut ? { proofsRanOut: true } : {}),
  }));
}
