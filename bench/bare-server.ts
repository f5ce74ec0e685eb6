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
 *   POST /reveal-audited?user=<uuid> the same read and one committed insert (an audit row), as one
 *                                    statement in one transaction (BEGIN, it, COMMIT pipelined):
 *                                    the least an audited reveal can do, one round trip everywhere;
 *                                    `&statements=2`: the read and the insert as two statements
 *                                    (the floor until 2026-11-25, measured beside it)
 *   PUT  /?user=<uuid>&type=<type>   write: one upsert of a ciphertext row (what PUT writes);
 *                                    `&synchronous_commit=off`: committed without waiting for the
 *                                    WAL flush, as the nonce commits (its floor)
 *
 * BENCH_FLOOR_WAY=guarded serves it the way the local server answers: through the connection
 * guard (server/connection-limits.ts) with the limits this environment gives the server. Unset or
 * `direct`: a plain Deno.serve, the way a deployed function is reached (bench/engines.ts).
 */
import { parseConfig } from "../functions/_shared/config/config.ts";
import { connectionLimitsFromEnv, serveWithLimits } from "../server/connection-limits.ts";
import { openDatabase } from "../server/database.ts";
import {
  auditedCiphertextsBare,
  auditedCiphertextsInTwoStatements,
  ciphertextsAnswer,
  ciphertextsBare,
  type FloorCommit,
  listAnswer,
  upsertAnswer,
} from "./floor-queries.ts";
import { type FloorWay, floorWay } from "./floor-way.ts";

const env = Deno.env.toObject();
const way: FloorWay = floorWay(env.BENCH_FLOOR_WAY);
const config = parseConfig(env);
const db = await openDatabase(config.database);
const storage = `${db.engine}:public.user_secrets`;

async function auditedCiphertexts(user: string | null, statements: string | null) {
  return ciphertextsAnswer(
    statements === "2"
      ? await auditedCiphertextsInTwoStatements(db, user)
      : await auditedCiphertextsBare(db, user),
  );
}

/** How a PUT commits: `synchronous_commit=off` is the nonce's floor. */
const commitOf = (url: URL): FloorCommit =>
  url.searchParams.get("synchronous_commit") === "off"
    ? "without waiting for the flush"
    : "flushed";

function answer(request: Request): Response | Promise<Response> {
  const url = new URL(request.url);
  const user = url.searchParams.get("user");
  if (url.pathname === "/ready") return Response.json({ storage, way });
  if (url.pathname === "/reveal") return ciphertextsBare(db, user).then(ciphertextsAnswer);
  if (url.pathname === "/reveal-audited") {
    return auditedCiphertexts(user, url.searchParams.get("statements"));
  }
  if (request.method === "PUT") {
    return upsertAnswer(db, user, url.searchParams.get("type"), commitOf(url));
  }
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
