/**
 * `deno task vault:rotate`: re-encrypts every stored secret still under an older key with the
 * active key (the first of ENCRYPTION_KEYS). Batched and resumable: Ctrl-C stops after the batch
 * in progress, and running it again continues where it stopped.
 *
 *   ENCRYPTION_KEYS=k2:<new base64>,k1:<old base64> DATABASE_URL=postgres://… deno task vault:rotate
 *
 * Options: --batch-size=N (default 100), --json (print the report as JSON).
 * Exit status (ROTATION_EXIT): 0 when every row is under the active key; 1 when it could not run
 * (a bad option, the configuration or database refused, or rows under the active key id that do
 * not open with it: nothing is rotated then); 2 when interrupted; 3 when it ran but rows are left
 * under older keys (skipped as unreadable, or written under an older key while it ran: some
 * process still has the old keyring), so a script can tell "fix and run again" from "refused".
 */
import { parseArgs } from "node:util";
import { parseStorageConfig } from "../functions/_shared/config/config.ts";
import { openDatabase } from "../server/database.ts";
import { createKeyring } from "../functions/_shared/vault/vault-crypto.ts";
import { lockDataDir, secureDataDir } from "../server/data-dir.ts";
import { exists, localEnv, parseOrExit, stepOrExit } from "../server/local-settings.ts";
import { DEFAULT_BATCH_SIZE, rotateKeys, ROTATION_EXIT } from "./lib/key-rotation.ts";

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    "batch-size": { type: "string", default: String(DEFAULT_BATCH_SIZE) },
    json: { type: "boolean", default: false },
  },
});
const batchSize = Number(args["batch-size"]);
if (!Number.isSafeInteger(batchSize) || batchSize < 1) {
  console.error("--batch-size must be a positive integer");
  Deno.exit(ROTATION_EXIT.refused);
}

// The local server's generated keys, when they exist; this command never creates keys.
const { env } = await localEnv({ createDevKeys: false });
// The database and the keyring only: rotation signs no session and answers no request.
const config = parseOrExit(() => parseStorageConfig(env));
if (config.database.engine === "pglite") {
  const { dataDir } = config.database;
  if (dataDir === null || !(await exists(dataDir))) {
    console.error(`no local database at ${dataDir}: nothing to rotate`);
    Deno.exit(ROTATION_EXIT.refused);
  }
  console.error(`rotating the embedded database in ${dataDir}`);
  // The same privacy as the server gives it (PGlite writes its files 0666).
  await secureDataDir(dataDir);
  await stepOrExit(() => lockDataDir(dataDir));
}

const keyring = createKeyring(config.encryptionKeys);
const db = await stepOrExit(() => openDatabase(config.database));
const stop = new AbortController();
const onInterrupt = () => {
  console.error("stopping after the batch in progress…");
  stop.abort();
};
Deno.addSignalListener("SIGINT", onInterrupt);

let exitCode: number = ROTATION_EXIT.done;
try {
  const report = await rotateKeys(db, keyring, {
    batchSize,
    signal: stop.signal,
    onBatch: ({ batch, rotated, skipped }) => {
      if (!args.json) console.log(`batch ${batch}: ${rotated} rotated, ${skipped} skipped so far`);
    },
  });
  if (args.json) {
    console.log(JSON.stringify(report, null, 2));
  } else {
    console.log(`active key: ${report.activeKeyId}`);
    if (report.activeKeyMismatch !== null) {
      console.log(
        `rows stored under ${report.activeKeyId} do not open with the configured ` +
          `${report.activeKeyId} (${report.activeKeyMismatch}): that id now names other bytes. ` +
          "Nothing was rotated. Give the new key a new id, first, and keep the old one after it.",
      );
    }
    console.log(
      `rotated ${report.rotated} of ${report.examined} rows under older keys ` +
        `in ${report.batches} batch(es)` +
        (report.passes > 1 ? ` over ${report.passes} passes` : "") +
        `; ${report.skipped} skipped`,
    );
    for (const problem of report.problems) {
      console.log(
        `  skipped ${problem.secretType} of user ${problem.userId} under key ${problem.keyId}: ` +
          problem.reason,
      );
    }
    const byKey = Object.entries(report.rowsByKeyId).map(([id, rows]) => `${id}: ${rows}`);
    console.log(`rows per key now: ${byKey.length === 0 ? "none stored" : byKey.join(", ")}`);
    if (report.remaining > 0) {
      console.log(
        `${report.remaining} row(s) were written under an older key while this ran: some ` +
          "process still encrypts with the old keyring; update it, then run this again",
      );
    }
    if (report.interrupted) console.log("interrupted: run the command again to continue");
  }
  exitCode = report.interrupted
    ? ROTATION_EXIT.interrupted
    : report.activeKeyMismatch !== null
    ? ROTATION_EXIT.refused
    : report.problems.length + report.remaining > 0
    ? ROTATION_EXIT.rowsLeft
    : ROTATION_EXIT.done;
} finally {
  Deno.removeSignalListener("SIGINT", onInterrupt);
  await db.close();
}
Deno.exit(exitCode);
