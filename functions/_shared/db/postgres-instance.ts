/**
 * One postgres.js instance with one connection, as postgres.ts holds them: the driver's options,
 * the types the statements bind and read, and reserving its connection.
 */
import postgres from "postgres";
import { fromHex, toHex } from "../bytes.ts";
import type { DatabaseSettings } from "./db.ts";
import { ARRAY_TYPES } from "./array-types.ts";

type PostgresSettings = Extract<DatabaseSettings, { engine: "postgres" }>;

export interface Instance {
  readonly sql: postgres.Sql;
  /**
   * Reserves its connection. Without the array types query, postgres.js 3.4.9 never answers a
   * reserve() that has to open the connection itself, so one not open (never opened, or closed
   * since, as the driver's onclose tells) is opened by a query first. Reserved in the same turn as
   * that check, the connection is still open when taken.
   */
  readonly reserve: () => Promise<postgres.ReservedSql>;
}

/**
 * bytea both ways through the engine's native hex codec where it has one (../bytes.ts): the
 * driver's default goes through Deno's Buffer hex code, which is JavaScript. Values come back as
 * plain Uint8Arrays, as PGlite returns them.
 */
const BYTEA = {
  to: 17,
  from: [17],
  serialize: (bytes: Uint8Array) => `\\x${toHex(bytes)}`,
  parse: (text: string) => fromHex(text.slice(2)),
};

export function openInstance(settings: PostgresSettings): Instance {
  let closes = 0;
  /** `closes` when a query last opened the connection: it is open while nothing closed it since. */
  let openedAfter = -1;
  const sql = postgres(settings.url, {
    max: 1,
    // Supabase's transaction pooler cannot keep prepared statements; DATABASE_PREPARE=false.
    prepare: settings.prepare,
    connect_timeout: Math.max(1, Math.ceil(settings.queryTimeoutMs / 1000)),
    idle_timeout: 30,
    // The default backoff grows to 20 s between reconnects, and queued requests wait it out, long
    // past their deadline, even after the database is back. Capped at 100 ms: an outage answers
    // 503 at once and recovery is noticed at once, while reconnects stay bounded by the number of
    // instances.
    backoff: (attempt: number) => Math.min(0.02 * attempt, 0.1),
    onnotice: () => {},
    // The array types are declared rather than looked up in the catalog on each new connection.
    fetch_types: false,
    types: { bytea: BYTEA, ...ARRAY_TYPES },
    onclose: () => closes++,
    // Nothing but application_name at startup: a transaction pooler refuses other startup
    // parameters (PgBouncer: "unsupported startup parameter"). The statement timeout is set
    // inside each transaction instead (postgres.ts).
    connection: { application_name: "wallet-vault" },
  });
  return {
    sql,
    async reserve() {
      if (openedAfter !== closes) {
        const before = closes;
        await sql.unsafe("select 1");
        if (closes !== before) {
          throw Object.assign(new Error("The connection closed as it opened."), {
            code: "CONNECTION_CLOSED",
          });
        }
        openedAfter = closes;
      }
      return sql.reserve();
    },
  };
}
