/**
 * Server CPU per sign-in, this tree against another one (an earlier commit), measured in the same
 * run on the same PostgreSQL, rounds interleaved so a busy moment hits both alike:
 *
 *   git archive <commit> | tar -x -C /tmp/before
 *   DATABASE_URL=… deno run -A bench/signin-cpu.ts /tmp/before
 *
 * Each tree's local server runs as its own process on a fresh database with exactly its engine's
 * environment (checked: it must report Postgres storage); per round, SIGNIN_N full wallet-proof
 * exchanges (nonces prepared first, 4 in flight) and the server's CPU time from /proc.
 * Knobs: SIGNIN_N (400), SIGNIN_ROUNDS (5).
 */
import { freePort } from "../tests/support/ports.ts";
import { integerKnob } from "./knobs.ts";
import { childEnv, cpuMs, reportedStorage, serverEnv } from "./processes.ts";
import { median } from "./summary.ts";
import { createDatabase, findPostgres, newAccount, preparedProof } from "./support.ts";

const N = integerKnob("SIGNIN_N", 400);
const ROUNDS = integerKnob("SIGNIN_ROUNDS", 5);
const other = Deno.args[0];
if (!other) {
  console.error("usage: deno run -A bench/signin-cpu.ts <the other tree's directory>");
  Deno.exit(2);
}
const admin = await findPostgres();
if (admin === null) {
  console.error("needs a PostgreSQL (DATABASE_URL or 127.0.0.1:5432)");
  Deno.exit(1);
}

async function start(root: string) {
  const db = await createDatabase("postgres", admin);
  const port = freePort();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${root}/server/main.ts`],
    cwd: root,
    clearEnv: true,
    env: childEnv({ ...serverEnv(db.env), PORT: String(port) }),
    stdout: "null",
    stderr: "null",
  }).spawn();
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const storage = await reportedStorage(url).catch(() => null);
    if (storage !== null) {
      if (storage !== "postgres:public.user_secrets") throw new Error(`${root} runs on ${storage}`);
      break;
    }
    if (Date.now() > deadline) throw new Error(`${root}/server/main.ts did not start`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { url, child, db };
}

const servers = {
  [other]: await start(other),
  "this tree": await start(new URL("..", import.meta.url).pathname.replace(/\/$/, "")),
};
const results: Record<string, number[]> = Object.fromEntries(
  Object.keys(servers).map((name) => [name, []]),
);
const wallets = Array.from({ length: 8 }, () => newAccount());
const exchange = async (url: string, proof: { message: string; signature: string }) => {
  const response = await fetch(`${url}/api/auth/wallet-proof`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(proof),
  });
  const body = await response.text();
  if (response.status !== 200) throw new Error(`wallet-proof: ${response.status} ${body}`);
};
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, server] of Object.entries(servers)) {
      const proofs = [];
      while (proofs.length < N + 20) {
        proofs.push(...await Promise.all(wallets.map((w) => preparedProof(server.url, w))));
      }
      for (const proof of proofs.slice(0, 20)) await exchange(server.url, proof); // warm-up
      const measured = proofs.slice(20, 20 + N);
      const before = await cpuMs(server.child.pid);
      let next = 0;
      await Promise.all(Array.from({ length: 4 }, async () => {
        while (next < measured.length) await exchange(server.url, measured[next++]);
      }));
      const after = await cpuMs(server.child.pid);
      results[name].push(((after! - before!) * 1000) / measured.length);
    }
    console.log(
      `round ${round + 1}: ${
        Object.entries(results).map(([name, xs]) => `${name} ${xs.at(-1)!.toFixed(0)} µs`).join(
          ", ",
        )
      } of server CPU per sign-in`,
    );
  }
  for (const [name, xs] of Object.entries(results)) {
    console.log(
      `${name}: median ${median(xs).toFixed(0)} µs (${Math.min(...xs).toFixed(0)}–${
        Math.max(...xs).toFixed(0)
      }) per sign-in`,
    );
  }
} finally {
  for (const server of Object.values(servers)) {
    server.child.kill("SIGTERM");
    await server.child.status;
    await server.db.drop();
  }
}
