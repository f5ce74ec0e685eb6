/**
 * `deno task vault:rotate` as an operator runs it: a separate process, configured only by its
 * environment, against a database that holds rows under an older key. It rotates them in batches,
 * reports the counts and exits 0; afterwards every value opens under the new key alone. Its exit
 * status tells "rows left to fix" (3) from "refused" (1).
 */
import assert from "node:assert/strict";
import type { Database } from "../functions/_shared/db/db.ts";
import { openDatabase } from "../server/database.ts";
import type { EncryptionKeySpec } from "../functions/_shared/config/encryption-keys.ts";
import { createKeyring } from "../functions/_shared/vault/vault-crypto.ts";
import { migrate } from "../server/migrations.ts";
import { type Engine, openTestDatabase, testEngines } from "./support/database.ts";

const SCRIPT = new URL("../scripts/rotate-keys.ts", import.meta.url).pathname;
const TYPES = ["provider_a_api_key", "provider_b_key", "provider_e_key"] as const;

const newKey = (id: string): EncryptionKeySpec => ({
  id,
  key: crypto.getRandomValues(new Uint8Array(32)),
});
const keyringVar = (keys: readonly EncryptionKeySpec[]) =>
  keys.map((k) => `${k.id}:${btoa(String.fromCharCode(...k.key))}`).join(",");

/** A creator with `address`; its id. */
async function addCreator(db: Database, address: string): Promise<string> {
  const [{ id }] = await db.query<{ id: string }>(
    "insert into public.wallet_users (wallet_address) values ($1) returning id",
    [address],
  );
  return id;
}

/** `value` stored as `keys`' active key seals it, as the service would have stored it. */
async function storeSealed(
  db: Database,
  keys: readonly EncryptionKeySpec[],
  userId: string,
  secretType: (typeof TYPES)[number],
  value: string,
): Promise<void> {
  const sealed = createKeyring(keys).encrypt(value, { userId, secretType });
  await db.query(
    `insert into public.user_secrets (user_id, secret_type, ciphertext, iv, key_id)
     values ($1, $2, $3, $4, $5)`,
    [userId, secretType, sealed.ciphertext, sealed.iv, sealed.keyId],
  );
}

/** The command in its own process, given only `env`, as an operator runs it. */
async function runRotate(env: Record<string, string>, args: string[] = []) {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", SCRIPT, ...args],
    env,
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code,
    printed: new TextDecoder().decode(stdout),
    errors: new TextDecoder().decode(stderr),
  };
}

/** A database the command can open from its own process, and what to tell it to find it. */
interface CommandDatabase {
  readonly db: Database;
  readonly env: Record<string, string>;
  /** Lets the command's process open the database (PGlite: closes this process's handle). */
  release(): Promise<void>;
  reopen(): Promise<Database>;
  close(): Promise<void>;
}

async function commandDatabase(engine: Engine): Promise<CommandDatabase> {
  if (engine === "postgres") {
    const test = await openTestDatabase("postgres");
    return {
      db: test.db,
      env: { DATABASE_URL: test.url! },
      release: () => Promise.resolve(),
      reopen: () => Promise.resolve(test.db),
      close: () => test.close(),
    };
  }
  // PGlite is single-process: the command gets a directory no one else has open.
  const dataDir = await Deno.makeTempDir({ prefix: "wallet-vault-rotate-" });
  const open = () => openDatabase({ engine: "pglite", dataDir });
  let db: Database = await open();
  await migrate(db);
  return {
    db,
    env: { PGLITE_DATA_DIR: dataDir },
    release: () => db.close(),
    async reopen() {
      return db = await open();
    },
    async close() {
      await db.close().catch(() => {});
      await Deno.remove(dataDir, { recursive: true });
    },
  };
}

/** `body` against a database the command can open, on every test engine. */
function rotateTest(name: string, body: (database: CommandDatabase) => Promise<void>) {
  for (const engine of testEngines()) {
    Deno.test({
      name: `${name} [${engine}]`,
      sanitizeOps: false,
      sanitizeResources: false,
      async fn() {
        const database = await commandDatabase(engine);
        try {
          await body(database);
        } finally {
          await database.close();
        }
      },
    });
  }
}

rotateTest(
  "deno task vault:rotate rotates every row under an older key",
  async (database) => {
    const k1 = newKey("k1");
    const k2 = newKey("k2");
    const values = new Map<string, string>();
    for (let creator = 0; creator < 2; creator++) {
      const id = await addCreator(database.db, `0x${String(creator + 1).repeat(40)}`);
      for (const secretType of TYPES) {
        const value = `sk-${secretType}-${crypto.randomUUID()}`;
        await storeSealed(database.db, [k1], id, secretType, value);
        values.set(`${id}/${secretType}`, value);
      }
    }
    await database.release();

    const { code, printed, errors } = await runRotate(
      // Only what rotation needs, as an operator would give it: no service secrets.
      { ENCRYPTION_KEYS: keyringVar([k2, k1]), ...database.env },
      ["--batch-size=4"],
    );
    assert.equal(code, 0, `${printed}\n${errors}`);
    assert.match(printed, /^batch 1: 4 rotated, 0 skipped so far$/m);
    assert.match(printed, /^batch 2: 6 rotated, 0 skipped so far$/m);
    assert.match(printed, /^active key: k2$/m);
    assert.match(
      printed,
      /^rotated 6 of 6 rows under older keys in 2 batch\(es\); 0 skipped$/m,
    );
    assert.match(printed, /^rows per key now: k2: 6$/m);
    // No key material and no value in what it printed.
    for (const secret of [keyringVar([k2, k1]), ...values.values()]) {
      assert.ok(!printed.includes(secret));
    }

    const db = await database.reopen();
    const rows = await db.query<
      {
        user_id: string;
        secret_type: string;
        ciphertext: Uint8Array;
        iv: Uint8Array;
        key_id: string;
      }
    >("select user_id, secret_type, ciphertext, iv, key_id from public.user_secrets");
    assert.equal(rows.length, values.size);
    const onlyNew = createKeyring([k2]);
    for (const row of rows) {
      assert.equal(row.key_id, "k2");
      const opened = onlyNew.decrypt(
        { ciphertext: row.ciphertext, iv: row.iv, keyId: row.key_id },
        { userId: row.user_id, secretType: row.secret_type as (typeof TYPES)[number] },
      );
      assert.equal(opened, values.get(`${row.user_id}/${row.secret_type}`));
    }
  },
);

rotateTest(
  "vault:rotate refuses an active key id that now names other bytes, rotating nothing",
  async (database) => {
    // One row under k1, and one under k0 that a rotation would otherwise re-encrypt.
    const k0 = newKey("k0");
    const k1 = newKey("k1");
    const id = await addCreator(database.db, `0x${"7".repeat(40)}`);
    const stored = [[k1, TYPES[0]], [k0, TYPES[1]]] as const;
    for (const [key, secretType] of stored) {
      await storeSealed(database.db, [key], id, secretType, `sk-${crypto.randomUUID()}`);
    }
    const before = await database.db.query<{ ciphertext: Uint8Array }>(
      "select ciphertext from public.user_secrets order by secret_type",
    );
    await database.release();

    // "Rotating" by changing k1's bytes in place, keeping k0 behind it.
    const { code, printed } = await runRotate({
      ENCRYPTION_KEYS: keyringVar([newKey("k1"), k0]),
      ...database.env,
    });
    assert.equal(code, 1, printed);
    assert.match(printed, /rows stored under k1 do not open with the configured k1/);
    assert.match(printed, /Nothing was rotated/);

    const db = await database.reopen();
    const after = await db.query<{ ciphertext: Uint8Array }>(
      "select ciphertext from public.user_secrets order by secret_type",
    );
    assert.deepEqual(after, before, "a row was rewritten");
  },
);

rotateTest(
  "vault:rotate exits 3 when rows are left under an older key it cannot open, having rotated the rest",
  async (database) => {
    // One row under k1, which rotates, and one under k0, which is not in the keyring.
    const k0 = newKey("k0");
    const k1 = newKey("k1");
    const k2 = newKey("k2");
    const id = await addCreator(database.db, `0x${"8".repeat(40)}`);
    await storeSealed(database.db, [k1], id, TYPES[0], `sk-${crypto.randomUUID()}`);
    await storeSealed(database.db, [k0], id, TYPES[1], `sk-${crypto.randomUUID()}`);
    await database.release();

    const { code, printed } = await runRotate({
      ENCRYPTION_KEYS: keyringVar([k2, k1]),
      ...database.env,
    });
    assert.equal(code, 3, printed);
    assert.match(
      printed,
      /^rotated 1 of 2 rows under older keys in 1 batch\(es\); 1 skipped$/m,
    );
    assert.match(printed, new RegExp(`skipped ${TYPES[1]} of user ${id} under key k0`));
    assert.match(printed, /^rows per key now: k0: 1, k2: 1$/m);
  },
);
