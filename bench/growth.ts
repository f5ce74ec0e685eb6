/**
 * Latency growth with the number of creators: one measuring creator at concurrency 1, the others
 * seeded in bulk between the steps.
 */
import { type BenchEngine, startChecked } from "./engines.ts";
import { serverEnv } from "./processes.ts";
import { proofPool, routes, workerSessions } from "./routes.ts";
import { GROWTH, GROWTH_MS, log } from "./settings.ts";
import type { RunResult } from "./summary.ts";
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
