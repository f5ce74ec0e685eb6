/**
 * The floors for the routes: a bare Deno.serve handler on 127.0.0.1 doing the one indexed query
 * each route needs, through the same driver with the same settings (parseConfig of the same
 * environment) — no proxy, token, transaction, RLS, encryption or audit call.
 *
 *   GET  /ready                      200 {"storage": "<engine>:public.user_secrets", "way": …}:
 *                                    the storage as the service reports it and how this floor is
 *                                    reached, so the bench can check both
 *   GET  /?user=<uuid>               read: the creator's masked rows (what GET /api/secrets reads)
 *   POST /reveal?user=<uuid>         read: the creator's ciphertexts (what reveal reads)
 *   POST /reveal-audited?user=<uuid> the same read and one committed insert (an audit row), in one
 *                                    transaction and one round trip (BEGIN, both, COMMIT pipelined):
 *                                    the least an audited reveal can do
 *   PUT  /?user=<uuid>&type=<type>   write: one upsert of a ciphertext row (what PUT writes)
 *
 * BENCH_FLOOR_WAY=guarded serves it the way the local server answers: through the connection
 * guard (server/connection-limits.ts) with the limits this environment gives the server. Unset or
 * `direct`: a plain Deno.serve, the way a deployed function is reached (bench/engines.ts).
 */
import { parseConfig } from "../functions/_shared/config/config.ts";
import { connectionLimitsFromEnv, serveWithLimits } from "../server/connection-limits.ts";
import { openDatabase } from "../server/database.ts";
import { listAnswer, upsertAnswer } from "./floor-queries.ts";
import { type FloorWay, floorWay } from "./floor-way.ts";

const env = Deno.env.toObject();
const way: FloorWay = floorWay(env.BENCH_FLOOR_WAY);
const config = parseConfig(env);
const db = await openDatabase(config.database);
const storage = `${db.engine}:public.user_secrets`;

/** What reveal reads: the creator's ciphertexts, answered by their sizes (nothing is decrypted). */
const CIPHERTEXTS =
  "select secret_type, ciphertext, iv, key_id from public.user_secrets where user_id = $1";
type CiphertextRow = { secret_type: string; ciphertext: Uint8Array; key_id: string };

const ciphertextsAnswer = (rows: readonly CiphertextRow[]) =>
  Response.json({
    secrets: rows.map((row) => ({ secretType: row.secret_type, bytes: row.ciphertext.length })),
  });

async function ciphertexts(user: string | null): Promise<Response> {
  return ciphertextsAnswer(await db.query<CiphertextRow>(CIPHERTEXTS, [user]));
}

async function auditedCiphertexts(user: string | null): Promise<Response> {
  const [read, audit] = await db.batch([
    { text: CIPHERTEXTS, params: [user] },
    {
      text: `insert into public.secret_events (user_id, secret_type, action)
               values ($1, 'provider_a_api_key', 'reveal')`,
      params: [user],
    },
  ]);
  if (read.status === "rejected") throw read.reason;
  if (audit.status === "rejected") throw audit.reason;
  return ciphertextsAnswer(read.value as CiphertextRow[]);
}

function answer(request: Request): Response | Promise<Response> {
  const url = new URL(request.url);
  const user = url.searchParams.get("user");
  if (url.pathname === "/ready") return Response.json({ storage, way });
  if (url.pathname === "/reveal") return ciphertexts(user);
  if (url.pathname === "/reveal-audited") return auditedCiphertexts(user);
  if (request.method === "PUT") return upsertAnswer(db, user, url.searchParams.get("type"));
  return listAnswer(db, user);
}

const server = way === "guarded"
  ? serveWithLimits(
    { hostname: "127.0.0.1", port: config.port, limits: connectionLimitsFromEnv(env) },
    answer,
  )
  : Deno.serve({ hostname: "127.0.0.1", port: config.port, onListen: () => {} }, answer);

Deno.addSignalListener("SIGTERM", async () => {
  await server.shutdown();
  await db.close();
  Deno.exit(0);
});
