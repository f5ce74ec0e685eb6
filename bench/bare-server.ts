/**
 * The floor for the secrets routes: a bare Deno.serve handler on 127.0.0.1 doing the one indexed
 * query GET /api/secrets needs (the creator's rows by primary key), through the same driver with
 * the same settings (parseConfig of the same environment) — no proxy, token, transaction or RLS.
 *
 *   GET /ready            200
 *   GET /?user=<uuid>     the creator's masked rows as JSON
 */
import { parseConfig } from "../functions/_shared/config.ts";
import { openDatabase } from "../functions/_shared/db.ts";
import { SECRET_TYPES } from "../functions/_shared/secret-types.ts";

const config = parseConfig(Deno.env.toObject());
const db = await openDatabase(config.database);

const server = Deno.serve(
  { hostname: "127.0.0.1", port: config.port, onListen: () => {} },
  async (request) => {
    const url = new URL(request.url);
    if (url.pathname === "/ready") return new Response("ok");
    const rows = await db.query<{ secret_type: string; updated_at: Date; hint: string | null }>(
      `select secret_type, updated_at, hint from public.user_secrets
        where user_id = $1 order by array_position($2::text[], secret_type)`,
      [url.searchParams.get("user"), SECRET_TYPES],
    );
    return Response.json({
      secrets: rows.map((row) => ({
        secretType: row.secret_type,
        updatedAt: row.updated_at.toISOString(),
        hint: row.hint,
      })),
    });
  },
);

Deno.addSignalListener("SIGTERM", async () => {
  await server.shutdown();
  await db.close();
  Deno.exit(0);
});
