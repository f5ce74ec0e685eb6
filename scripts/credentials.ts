/**
 * `deno task credentials:add|list|rotate|revoke`: the live-run credentials, one per live-run
 * service, managed in the database the functions read (DATABASE_URL, else SUPABASE_DB_URL; else
 * the local server's embedded database, while that server is stopped). Nothing is redeployed: a
 * reveal checks its credential in its own statement, so each change holds from the next reveal.
 *
 *   deno task credentials:add image-worker --types=provider_b_key,provider_c_key [--expires-in=90d]
 *   deno task credentials:list [--json]
 *   deno task credentials:rotate image-worker --grace=1h [--expires-in=90d]
 *   deno task credentials:revoke image-worker
 *
 * add and rotate print the new credential once, on standard output (everything else goes to
 * standard error): only its hash is stored, so it cannot be shown again. Durations are seconds, or
 * a number with s, m, h or d. Exit status: 0 done, 1 refused (a bad option, a name with a live
 * credential already or none to rotate, the database unreachable).
 */
import { parseArgs } from "node:util";
import { databaseUrl, processEnv } from "../functions/_shared/config/env-schema.ts";
import { parseDatabaseUrl, preparesStatements } from "../functions/_shared/config/parse.ts";
import type { Database, DatabaseSettings } from "../functions/_shared/db/db.ts";
import { openDatabase } from "../server/database.ts";
import { lockDataDir, secureDataDir } from "../server/data-dir.ts";
import { exists, stepOrExit } from "../server/local-settings.ts";
import { migrate } from "../server/migrations.ts";
import {
  addCredential,
  CredentialCommandError,
  type CredentialInfo,
  listCredentials,
  revokeCredential,
  rotateCredential,
} from "../server/live-run-credentials.ts";

const { values: options, positionals } = parseArgs({
  args: Deno.args,
  allowPositionals: true,
  options: {
    types: { type: "string" },
    "expires-in": { type: "string" },
    grace: { type: "string" },
    json: { type: "boolean", default: false },
  },
});
const [command, name, ...extra] = positionals;

function refuse(message: string): never {
  console.error(`credentials: ${message}`);
  Deno.exit(1);
}

const UNITS: Readonly<Record<string, number>> = { "": 1, s: 1, m: 60, h: 3600, d: 86_400 };

/** A duration option in seconds: `90`, `90s`, `15m`, `24h`, `90d`. */
function seconds(option: string, text: string): number {
  const match = /^(\d{1,9})([smhd]?)$/.exec(text.trim());
  if (match === null) refuse(`--${option} is seconds, or a number with s, m, h or d (as 24h)`);
  return Number(match[1]) * UNITS[match[2]];
}

function expiry(): Date | null {
  const given = options["expires-in"];
  return given === undefined ? null : new Date(Date.now() + seconds("expires-in", given) * 1000);
}

/** The database the functions read, as migrate.ts opens it; else the local embedded one. */
async function database(): Promise<Database> {
  const env = processEnv();
  const given = databaseUrl(env);
  if (given !== undefined) {
    // Checked as the service checks it: a URL the driver cannot read would be quoted whole.
    const problems: string[] = [];
    const target = parseDatabaseUrl(given.url, given.name, problems);
    if (target === null) refuse(problems.join("; "));
    const settings: DatabaseSettings = {
      engine: "postgres",
      url: target.url,
      maxConnections: 1,
      prepare: preparesStatements(target, env.DATABASE_PREPARE),
      queryTimeoutMs: 30_000,
    };
    return await stepOrExit(() => openDatabase(settings));
  } else {
    const dataDir = env.PGLITE_DATA_DIR?.trim() || ".local/pglite";
    if (!(await exists(dataDir))) {
      refuse(`set DATABASE_URL, or start the local server once (no database at ${dataDir})`);
    }
    console.error(`using the embedded database in ${dataDir}`);
    // The same privacy and the same one-process lock as the server's (PGlite writes 0666).
    await secureDataDir(dataDir);
    await stepOrExit(() => lockDataDir(dataDir));
    const db = await stepOrExit(() => openDatabase({ engine: "pglite", dataDir }));
    // As the server's next start would: the embedded database may predate the credentials table.
    await migrate(db);
    return db;
  }
}

function describe(credential: CredentialInfo): string {
  const until = credential.expiresAt === null ? "no expiry" : credential.expiresAt.toISOString();
  const status = credential.status === "live" ? `live until ${until}` : credential.status;
  return `${credential.name}  ${status}  ${credential.secretTypes.join(",")}  ` +
    `created ${credential.createdAt.toISOString()}  id ${credential.id}`;
}

/** The credential on standard output, alone, so `$(…)` or a secret store can take it. */
function showOnce(credential: string, info: CredentialInfo): void {
  console.error(
    `${describe(info)}\nthe credential follows; it is shown this once (only its ` +
      "hash is stored): give it to that service's live-run servers as their " +
      "x-service-server-secret",
  );
  console.log(credential);
}

if (!["add", "list", "rotate", "revoke"].includes(command ?? "")) {
  refuse("usage: credentials add|list|rotate|revoke (see scripts/credentials.ts)");
}
if (command !== "list" && name === undefined) refuse(`${command} needs the service's name`);
if (extra.length > 0) refuse(`unexpected argument(s): ${extra.join(" ")}`);

const db = await database();
try {
  if (command === "add") {
    const types = (options.types ?? "").split(",").map((type) => type.trim()).filter(Boolean);
    const { credential, info } = await addCredential(db, name, types, expiry());
    showOnce(credential, info);
  } else if (command === "list") {
    const credentials = await listCredentials(db);
    if (options.json) console.log(JSON.stringify(credentials, null, 2));
    else if (credentials.length === 0) console.log("no live-run credentials");
    else for (const credential of credentials) console.log(describe(credential));
  } else if (command === "rotate") {
    if (options.grace === undefined) {
      refuse("rotate needs --grace: how long the old credential keeps working (as 1h)");
    }
    const rotation = await rotateCredential(db, name, seconds("grace", options.grace), expiry());
    console.error(
      `the previous ${name} credential keeps working until ` +
        `${rotation.predecessorExpiresAt.toISOString()}, then is refused`,
    );
    showOnce(rotation.credential, rotation.info);
  } else {
    const revoked = await revokeCredential(db, name);
    if (revoked === 0) refuse(`${name} has no credential to revoke`);
    console.log(`revoked ${revoked} credential(s) of ${name}: refused from the next reveal`);
  }
} catch (error) {
  if (!(error instanceof CredentialCommandError)) throw error;
  Deno.exitCode = 1;
  console.error(`credentials: ${error.message}`);
} finally {
  await db.close();
}
