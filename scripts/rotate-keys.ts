/**
 * `deno task vault:rotate`: re-encrypts every stored secret still under an older key with the
 * active key (the first of ENCRYPTION_KEYS). Batched and resumable: Ctrl-C stops after the batch
 * in progress, and running it again continues where it stopped.
 *
 *   ENCRYPTION_KEYS=k2:<new base64>,k1:<old base64> DATABASE_URL=postgres://… deno task vault:rotate
 *
 * Options: --batch-size=N (default 100), --json (print the report as JSON).
 * Exit status: 0 when every row is under the active key, 1 when some rows could not be rotated or
 * were written under an older key while it ran (some process still has the old keyring), or when
 * rows under the active key id do not open with it (nothing is rotated then), 2 when interrupted.
 */
import { parseArgs } from "node:util";
import { parseStorageConfig } from "../functions/_shared/config/config.ts";
import { openDatabase } from "../server/database.ts";
import { importKeyring } from "../functions/_shared/vault/vault-crypto.ts";
import { lockDataDir, secureDataDir } from "../server/data-dir.ts";
import { exists, localEnv, parseOrExit, stepOrExit } from "../server/local-settings.ts";
import { DEFAULT_BATCH_SIZE, rotateKeys } from "./lib/key-rotation.ts";

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
  Deno.exit(1);
}

// The local server's generated keys, when they exist; this command never creates keys.
const { env } = await localEnv({ createDevKeys: false });
// The database and the keyring only: rotation signs no session and answers no request.
const config = parseOrExit(() => parseStorageConfig(env));
if (config.database.engine === "pglite") {
  const { dataDir } = config.database;
  if (dataDir === null || !(await exists(dataDir))) {
    console.error(`no local database at ${dataDir}: nothing to rotate`);
    Deno.exit(1);
  }
  console.error(`rotating the embedded database in ${dataDir}`);
  // The same privacy as the server gives it (PGlite writes its files 0666).
  await secureDataDir(dataDir);
  await stepOrExit(() => lockDataDir(dataDir));
}

const keyring = await importKeyring(config.encryptionKeys);
const db = await stepOrExit(() => openDatabase(config.database));
const stop = new AbortController();
const onInterrupt = () => {
  console.error("stopping after the batch in progress…");
  stop.abort();
};
Deno.addSignalListener("SIGINT", onInterrupt);

let exitCode = 0;
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
  const failed = report.activeKeyMismatch !== null ||
    report.problems.length + report.remaining > 0;
  exitCode = report.interrupted ? 2 : failed ? 1 : 0;
} finally {
  Deno.removeSignalListener("SIGINT", onInterrupt);
  await db.close();
}
Deno.exit(exitCode);
