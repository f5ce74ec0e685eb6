/**
 * postgres.js driver instances of one connection each, handed out warmest first
 * (connection-stack.ts), and the one way a use gets a connection: reserved, under an optional
 * deadline, and replaced rather than reused once it may be unusable.
 */
import postgres from "postgres";
import { fromHex, toHex } from "../bytes.ts";
import type { DatabaseSettings } from "./db.ts";
import { connectionLost, DatabaseDeadlineError, guardDriverFailures } from "./postgres-failures.ts";
import { createConnectionStack, type EndingState } from "./connection-stack.ts";

export type PostgresSettings = Extract<DatabaseSettings, { engine: "postgres" }>;

/** A use's deadline: whether it has passed, and a promise that rejects when it does. */
export interface Deadline {
  readonly expired: () => boolean;
  readonly passed: Promise<never>;
}

/** Runs `use` on a reserved connection of its own; `markLost` says it must not be reused. */
export type OnReservedConnection = <T>(
  use: (reserved: postgres.ReservedSql, markLost: () => void) => Promise<T>,
  deadline?: Deadline,
) => Promise<T>;

export interface ReservedConnections {
  readonly onReservedConnection: OnReservedConnection;
  readonly close: () => Promise<void>;
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

/** The longest the driver waits before it connects again. */
const RECONNECT_CAP_MS = 100;

/** A driver instance of one connection: which connection a use gets is the stack's choice. */
function openInstance(settings: PostgresSettings): postgres.Sql {
  return postgres(settings.url, {
    max: 1,
    // Supabase's transaction pooler cannot keep prepared statements; DATABASE_PREPARE=false.
    prepare: settings.prepare,
    connect_timeout: Math.max(1, Math.ceil(settings.queryTimeoutMs / 1000)),
    idle_timeout: 30,
    // The default backoff grows to 20 s between reconnects, and queued requests wait it out, long
    // past their deadline, even after the database is back. Capped: an outage answers 503 at once
    // and recovery is noticed at once, while reconnects stay bounded by the number of instances.
    backoff: (attempt: number) => Math.min(0.02 * attempt, RECONNECT_CAP_MS / 1000),
    onnotice: () => {},
    types: { bytea: BYTEA },
    // Nothing but application_name at startup: a transaction pooler refuses other startup
    // parameters (PgBouncer: "unsupported startup parameter"). The statement timeout is set
    // inside each transaction instead.
    connection: { application_name: "wallet-vault" },
    // fetch_types stays on (the default): postgres.js 3.4.9 answers a reserve() that has to open
    // the connection only after the array types query, and without it never.
  });
}

/** Up to `maxConnections` instances, each held by one use at a time, the warmest handed out first. */
export function openReservedConnections(settings: PostgresSettings): ReservedConnections {
  const timeoutMs = settings.queryTimeoutMs;
  const instances = createConnectionStack({
    max: settings.maxConnections,
    open: () => openInstance(settings),
    // A use still under way ends by its deadline; it is cut off after that. One replaced after a
    // failed connection is ended once the driver's reconnect for the failed request (within the
    // backoff cap) has been made: ended sooner, that reconnect would open a connection no one ends.
    end: async (instance: postgres.Sql, state: EndingState) => {
      if (state === "replaced") {
        await new Promise((resolve) => setTimeout(resolve, 2 * RECONNECT_CAP_MS));
      }
      await instance.end({ timeout: state === "busy" ? Math.ceil(timeoutMs / 1000) : 0 });
    },
  });
  // Which instance raced cannot be told, so every one is replaced (rare).
  const stopGuarding = guardDriverFailures(() => instances.replaceAll());

  /**
   * Runs `use` on the connection of an instance of its own, reserved: should the server close it
   * mid-transaction, the statements still queued for it stay there, where the instance itself would
   * connect again and run them outside the transaction. A connection the server closed while idle
   * is opened again by the driver when reserved.
   *
   * The instance is replaced, neither reused nor released, after a lost connection (postgres.js
   * 3.4.9 can leave the connection object wedged, see postgres-failures.ts, and releasing a closed
   * reserved connection would put it among the driver's open ones), and after a failed reserve:
   * the driver keeps the failed request queued and connects again for it, and a reserve made
   * meanwhile becomes that connection's first request, which is never answered. A reserve still
   * waiting at the deadline is given up the same way.
   */
  const onReservedConnection: OnReservedConnection = async (use, deadline) => {
    const instance = await instances.acquire();
    let reserved: postgres.ReservedSql | undefined;
    let unusable = false;
    try {
      if (deadline?.expired()) throw new DatabaseDeadlineError(timeoutMs);
      const reserving = instance.reserve();
      try {
        reserved = await (deadline ? Promise.race([reserving, deadline.passed]) : reserving);
      } catch (error) {
        unusable = true;
        // Granted after all: given back, so that the replaced instance can end.
        reserving.then((late) => late.release(), () => {});
        throw error;
      }
      if (deadline?.expired()) throw new DatabaseDeadlineError(timeoutMs);
      return await use(reserved, () => unusable = true);
    } catch (error) {
      if (connectionLost(error, true)) unusable = true;
      throw error;
    } finally {
      if (unusable) {
        instances.replace(instance);
      } else {
        reserved?.release();
        instances.release(instance);
      }
    }
  };

  return {
    onReservedConnection,
    async close() {
      stopGuarding();
      await instances.close();
    },
  };
}
