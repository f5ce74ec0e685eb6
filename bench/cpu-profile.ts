/**
 * `deno task bench:cpu-profile`: a V8 CPU profile of the local server (its own process, on
 * PostgreSQL) while one client sends one route's requests one at a time: where the server's own
 * CPU goes, by function and by module (our code, postgres.js, jose, zod, Deno's HTTP server and
 * fetch internals, the garbage collector). Taken through the inspector protocol (--inspect), as
 * Deno 2.9 has no --cpu-prof.
 *
 *   deno task bench:cpu-profile [route…]
 *
 * Routes: list put nonce wallet-proof reveal, and the floors floor-read floor-write
 * floor-ciphertexts (bench/bare-server.ts, profiled the same way); all of them by default.
 *
 * Knobs: PROFILE_REQUESTS per route (2000), PROFILE_DIR (bench/results). Writes
 * <PROFILE_DIR>/cpu-<route>.cpuprofile (open in Chrome DevTools) and cpu-profile.json (each
 * route's summary), and prints the top entries.
 */
import { SECRET_TYPES } from "../functions/_shared/vault/secret-types.ts";
import { join } from "node:path";
import { freePort } from "../tests/support/ports.ts";
import { exitOnUnknownChoices, integerKnob } from "./knobs.ts";
import { assertStorage, serverEnv, startProcess } from "./processes.ts";
import {
  createDatabase,
  findPostgres,
  newAccount,
  preparedProof,
  putSecret,
  signIn,
} from "./support.ts";

const REQUESTS = integerKnob("PROFILE_REQUESTS", 2000);
const OUT_DIR = Deno.env.get("PROFILE_DIR") ?? new URL("results/", import.meta.url).pathname;
const PROFILABLE = [
  "list",
  "floor-read",
  "put",
  "floor-write",
  "nonce",
  "wallet-proof",
  "reveal",
  "floor-ciphertexts",
];
const ROUTES = Deno.args.length > 0 ? Deno.args : PROFILABLE;
exitOnUnknownChoices(ROUTES, PROFILABLE, "No such route: ");

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** A minimal inspector client: one WebSocket, numbered requests. */
async function inspector(port: number) {
  const targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
  const socket = new WebSocket(targets[0].webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = reject;
  });
  let next = 1;
  const waiting = new Map<number, (result: unknown) => void>();
  socket.onmessage = (event) => {
    const message = JSON.parse(event.data);
    if (message.id !== undefined) waiting.get(message.id)?.(message.result ?? message.error);
  };
  return {
    send<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
      const id = next++;
      socket.send(JSON.stringify({ id, method, params }));
      return new Promise((resolve) => waiting.set(id, resolve as (result: unknown) => void));
    },
    close: () => socket.close(),
  };
}

function categoryOf(url: string, name: string): string {
  if (name === "(garbage collector)") return "garbage collector";
  if (name === "(idle)") return "idle";
  if (name === "(program)") return "V8/native (program)";
  if (url.includes("/functions/")) return "our code (functions/)";
  if (url.includes("/server/")) return "our code (server/)";
  if (url.includes("/postgres/")) return "postgres.js";
  if (url.includes("/jose/")) return "jose";
  if (url.includes("/zod/")) return "zod";
  if (url.includes("/@noble/")) return "@noble/hashes";
  if (url.startsWith("ext:deno_http") || url.includes("deno_http")) return "Deno HTTP server";
  if (url.startsWith("ext:deno_fetch")) return "Deno fetch/Request/Response/Headers";
  if (url.startsWith("ext:deno_web") || url.startsWith("ext:deno_webidl")) return "Deno web APIs";
  if (url.startsWith("ext:deno_node") || url.startsWith("node:")) return "Deno node compat";
  if (url.startsWith("ext:deno_crypto")) return "WebCrypto";
  if (url.startsWith("ext:deno_net")) return "Deno net";
  if (url.startsWith("ext:")) return url.split("/")[0];
  if (url === "") return `native: ${name || "(anonymous)"}`;
  return url.replace(/^.*\/node_modules\//, "");
}

function summarize(profile: Profile, requests: number) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const byFunction = new Map<string, number>();
  const byCategory = new Map<string, number>();
  let busy = 0;
  for (const [id, us] of self) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const category = categoryOf(url, functionName);
    byCategory.set(category, (byCategory.get(category) ?? 0) + us);
    if (category === "idle") continue;
    busy += us;
    const key = `${functionName || "(anonymous)"} ${
      url.replace(/^.*\/(node_modules|wt-[a-z]+)\//, "")
    }:${lineNumber + 1}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
  }
  const top = (map: Map<string, number>, n: number) =>
    [...map].sort((a, b) => b[1] - a[1]).slice(0, n).map(([name, us]) => ({
      name,
      usPerRequest: us / requests,
    }));
  return {
    busyUsPerRequest: busy / requests,
    categories: top(byCategory, 20),
    functions: top(byFunction, 25),
  };
}

const adminUrl = await findPostgres();
if (adminUrl === null) {
  console.error("bench/cpu-profile.ts needs a PostgreSQL (DATABASE_URL or 127.0.0.1:5432)");
  Deno.exit(1);
}
const db = await createDatabase("postgres", adminUrl);
const keys = serverEnv(db.env);
const inspectPort = freePort();
const server = await startProcess("server/main.ts", keys, "/api/secrets", [
  `--inspect=127.0.0.1:${inspectPort}`,
]);
const floorInspectPort = freePort();
// Reached as the bench's local floors are: through the same connection guard as the server.
const floor = await startProcess(
  "bench/bare-server.ts",
  { ...keys, BENCH_FLOOR_WAY: "guarded" },
  "/ready",
  [
    `--inspect=127.0.0.1:${floorInspectPort}`,
  ],
);
const summaries: Record<string, ReturnType<typeof summarize>> = {};
try {
  await assertStorage("the profiled server", server.url, "postgres:public.user_secrets");
  await assertStorage("the profiled floor", floor.url, "postgres:public.user_secrets", "/ready");
  const creatorWithSecrets = async (prefix: string) => {
    const creator = await signIn(server.url);
    for (const secretType of SECRET_TYPES) {
      await putSecret(
        server.url,
        creator.accessToken,
        secretType,
        `${prefix}-${secretType}-0123456789abcdef`,
      );
    }
    return creator;
  };
  const session = await creatorWithSecrets("sk-profile");
  // The floors write random bytes over their creator's ciphertexts: a creator of their own, so
  // reveal still finds the service's.
  const floorCreator = await creatorWithSecrets("sk-floor");
  const auth = { authorization: `Bearer ${session.accessToken}` };
  const json = { "content-type": "application/json" };
  const wallet = newAccount();
  const requestFor: Record<string, (i: number) => Promise<Request>> = {
    list: () => Promise.resolve(new Request(`${server.url}/api/secrets`, { headers: auth })),
    put: (i) =>
      Promise.resolve(
        new Request(`${server.url}/api/secrets`, {
          method: "PUT",
          headers: { ...auth, ...json },
          body: JSON.stringify({
            secretType: SECRET_TYPES[i % 7],
            value: `sk-profile-${i}-0123456789abcdef`,
          }),
        }),
      ),
    nonce: () =>
      Promise.resolve(
        new Request(`${server.url}/api/auth/nonce`, { method: "POST", headers: json, body: "{}" }),
      ),
    reveal: () =>
      Promise.resolve(
        new Request(`${server.url}/api/secrets/reveal`, {
          method: "POST",
          headers: { ...auth, ...json, "x-service-server-secret": server.env.SERVER_REVEAL_TOKEN },
          body: "{}",
        }),
      ),
    "floor-read": () => Promise.resolve(new Request(`${floor.url}/?user=${floorCreator.userId}`)),
    "floor-write": (i) =>
      Promise.resolve(
        new Request(`${floor.url}/?user=${floorCreator.userId}&type=${SECRET_TYPES[i % 7]}`, {
          method: "PUT",
        }),
      ),
    "floor-ciphertexts": () =>
      Promise.resolve(
        new Request(`${floor.url}/reveal?user=${session.userId}`, { method: "POST" }),
      ),
    "wallet-proof": async () => {
      const proof = await preparedProof(server.url, wallet);
      return new Request(`${server.url}/api/auth/wallet-proof`, {
        method: "POST",
        headers: json,
        body: JSON.stringify(proof),
      });
    },
  };
  const clients = {
    server: await inspector(inspectPort),
    floor: await inspector(floorInspectPort),
  };
  for (const client of Object.values(clients)) {
    await client.send("Profiler.enable");
    await client.send("Profiler.setSamplingInterval", { interval: 100 });
  }
  for (const route of ROUTES) {
    const client = route.startsWith("floor-") ? clients.floor : clients.server;
    // wallet-proof: the proofs are prepared first, so their nonce requests stay out of the profile.
    const requests: Request[] = [];
    for (let i = 0; i < REQUESTS + 200; i++) requests.push(await requestFor[route](i));
    for (const request of requests.slice(0, 200)) await (await fetch(request)).text(); // warm-up
    await client.send("Profiler.start");
    for (const request of requests.slice(200)) {
      const response = await fetch(request);
      const body = await response.text();
      if (response.status !== 200) throw new Error(`${route}: ${response.status} ${body}`);
    }
    const { profile } = await client.send<{ profile: Profile }>("Profiler.stop");
    await Deno.writeTextFile(join(OUT_DIR, `cpu-${route}.cpuprofile`), JSON.stringify(profile));
    summaries[route] = summarize(profile, REQUESTS);
    const s = summaries[route];
    console.log(`\n${route}: ${s.busyUsPerRequest.toFixed(0)} µs of server CPU per request`);
    for (const c of s.categories) {
      if (c.name !== "idle") {
        console.log(`  ${c.usPerRequest.toFixed(1).padStart(7)} µs  ${c.name}`);
      }
    }
    console.log("  top functions (self time):");
    for (const f of s.functions.slice(0, 15)) {
      console.log(`  ${f.usPerRequest.toFixed(1).padStart(7)} µs  ${f.name}`);
    }
  }
  for (const client of Object.values(clients)) client.close();
} finally {
  await server.stop();
  await floor.stop();
  await db.drop();
}
await Deno.writeTextFile(
  join(OUT_DIR, "cpu-profile.json"),
  JSON.stringify({ date: new Date().toISOString(), requests: REQUESTS, summaries }, null, 2) + "\n",
);
