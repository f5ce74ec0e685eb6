/**
 * The floors: a bare Deno.serve doing the one statement each route cannot do without, through the
 * same driver and settings as the service (parseConfig of the same environment), and the one
 * computation it cannot do without (the reveal's decryptions and the PUT's encryption, with the
 * vault's own keyring), and nothing else (no token, no row-level security, no validation).
 *
 *   GET  /ready                       {storage}, so the bench can check the engine
 *   GET  /?user=<id>                  the creator's masked rows with each one's last reveal (GET)
 *   POST /reveal?user=<id>            its JSON body read (the route's, `{}`); the creator's
 *                                     ciphertexts and one committed audit row naming the seven
 *                                     types, as one statement, each ciphertext decrypted while the
 *                                     commit is under way, as the reveal does (reveal)
 *   PUT  /?user=<id>&type=<type>      one upsert of a ciphertext row: with the route's JSON body,
 *                                     its value encrypted by the vault's keyring (PUT); without one,
 *                                     random bytes (sign-in's write)
 *        …&flush=off                  the same, committed without waiting for the WAL flush (nonce)
 *
 * BENCH_FLOOR_AT_EDGE=1 answers through the local server's edge, as the local server does: its
 * connection guard and its rewrite of the client-address header. Any local server that stands in
 * for Supabase's gateway must do both, so they belong to the floor, not to the service's overhead.
 */
import { parseConfig } from "../functions/_shared/config/config.ts";
import type { Database } from "../functions/_shared/db/db.ts";
import { createKeyring, type Keyring } from "../functions/_shared/vault/vault-crypto.ts";
import { SECRET_TYPES, type SecretType } from "../protocol/secret-types.ts";
import { atEdge } from "../server/app.ts";
import { connectionLimitsFromEnv, serveWithLimits } from "../server/connection-limits.ts";
import { openDatabase } from "../server/database.ts";

export const LIST = `select s.secret_type, s.updated_at, s.hint,
    (select l.revealed_at from public.secret_last_reveals l
      where l.user_id = s.user_id and l.secret_type = s.secret_type
        and l.revealed_at >= s.updated_at) as last_used_at
  from public.user_secrets s where s.user_id = $1 order by array_position($2::text[], s.secret_type)`;

// One statement, so one round trip even where nothing is prepared (behind a pooler).
export const AUDITED_READ = `with audit as (
    insert into public.secret_events (user_id, secret_types, action) values ($1, $2::text[], 'reveal'))
  select secret_type, ciphertext, iv, key_id from public.user_secrets where user_id = $1`;

export const UPSERT =
  `insert into public.user_secrets (user_id, secret_type, ciphertext, iv, key_id)
    values ($1, $2, $3, $4, $5)
  on conflict (user_id, secret_type) do update
    set ciphertext = excluded.ciphertext, iv = excluded.iv, updated_at = now()
  returning updated_at, xmax = 0 as created`;

/** The nonce's commit: its writes are cheap to lose (docs/security.md says why that is safe). */
export const WITHOUT_FLUSH = "set local synchronous_commit = off";

/**
 * A PUT's body, `{ secretType, value }` as the route takes it, read and its value encrypted with the
 * vault's keyring; without a body (the nonce's and sign-in's floors, which encrypt nothing), random
 * bytes in its place.
 */
async function sealedBody(request: Request, userId: string, keyring: Keyring) {
  // Read as text: a PUT served by Deno has a body stream even when nothing was sent.
  const text = await request.text();
  if (text === "") {
    const random = (n: number) => crypto.getRandomValues(new Uint8Array(n));
    return [random(48), random(12), "k1"];
  }
  const { secretType, value } = JSON.parse(text);
  const sealed = keyring.encrypt(value, { userId, secretType });
  return [sealed.ciphertext, sealed.iv, sealed.keyId];
}

type Sealed = { secret_type: SecretType; ciphertext: Uint8Array; iv: Uint8Array; key_id: string };

export function floorHandler(
  db: Database,
  keyring: Keyring,
): (request: Request) => Promise<Response> {
  const storage = `${db.engine}:public.user_secrets`;
  return async (request) => {
    const url = new URL(request.url);
    const user = url.searchParams.get("user");
    if (url.pathname === "/ready") return Response.json({ storage });
    if (url.pathname === "/reveal") {
      // Read as the route reads it; what it asks for is every type, as AUDITED_READ reads.
      await request.json();
      const secrets = await db.queryOverlappingCommit<Sealed, { value: string }[]>(
        { text: AUDITED_READ, params: [user, SECRET_TYPES] },
        (rows) =>
          rows.map((row) => ({
            value: keyring.decrypt(
              { ciphertext: row.ciphertext, iv: row.iv, keyId: row.key_id },
              { userId: user!, secretType: row.secret_type },
            ),
          })),
      );
      return Response.json({ secrets });
    }
    if (request.method === "PUT") {
      const params = [
        user,
        url.searchParams.get("type"),
        ...await sealedBody(request, user!, keyring),
      ];
      // The nonce's floor sends the setting and the upsert in one transaction, as the nonce does.
      const outcomes = url.searchParams.get("flush") === "off"
        ? await db.batch([{ text: WITHOUT_FLUSH }, { text: UPSERT, params }])
        : [{ status: "fulfilled" as const, value: await db.query(UPSERT, params) }];
      for (const outcome of outcomes) if (outcome.status === "rejected") throw outcome.reason;
      const [row] = (outcomes.at(-1) as PromiseFulfilledResult<{ updated_at: Date }[]>).value;
      return Response.json({ updatedAt: row.updated_at.toISOString() });
    }
    const rows = await db.query<{ secret_type: string; hint: string }>(LIST, [user, SECRET_TYPES]);
    return Response.json({
      secrets: rows.map((row) => ({ secretType: row.secret_type, hint: row.hint })),
    });
  };
}

if (import.meta.main) {
  const env = Deno.env.toObject();
  const config = parseConfig(env);
  const db = await openDatabase(config.database);
  const handler = floorHandler(db, createKeyring(config.encryptionKeys));
  const server = env.BENCH_FLOOR_AT_EDGE === "1"
    ? serveWithLimits(
      { hostname: "127.0.0.1", port: config.port, limits: connectionLimitsFromEnv(env) },
      atEdge(handler, config.clientIp),
    )
    : Deno.serve({ hostname: "127.0.0.1", port: config.port, onListen() {} }, handler);
  Deno.addSignalListener("SIGTERM", async () => {
    await server.shutdown();
    await db.close();
    Deno.exit(0);
  });
}
