/**
 * The database tests in Supabase's own format (issue 12 item 7): every file under
 * supabase/tests/database/*.test.sql, run by `pg_prove` against a fresh database with the
 * migrations applied, exactly as `supabase test db` runs them on a project. The files themselves
 * are unchanged for either runner; this only supplies what a Supabase project already has: an
 * `extensions` schema the API roles may use, on the search_path, holding pgTAP.
 *
 * Skipped, saying why, without DATABASE_URL, without pg_prove (Debian:
 * libtap-parser-sourcehandler-pgtap-perl) or without the pgtap extension (postgresql-15-pgtap).
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { openDatabase } from "../server/database.ts";
import { migrate } from "../server/migrations.ts";

const TESTS_DIR = new URL("../supabase/tests/database/", import.meta.url);
const adminUrl = Deno.env.get("DATABASE_URL");

async function findPgProve(): Promise<string | null> {
  for (const dir of [...(Deno.env.get("PATH") ?? "").split(":"), "/usr/bin"]) {
    if (!dir) continue;
    const candidate = `${dir}/pg_prove`;
    try {
      if ((await Deno.stat(candidate)).isFile) return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

async function pgtapAvailable(url: string): Promise<boolean> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    return (await sql`select 1 from pg_available_extensions where name = 'pgtap'`).length > 0;
  } finally {
    await sql.end();
  }
}

const pgProve = await findPgProve();
const skipReason = !adminUrl
  ? "set DATABASE_URL to a PostgreSQL server (e.g. postgres://postgres@127.0.0.1:5432/test)"
  : pgProve === null
  ? "pg_prove is not installed (Debian: apt-get install libtap-parser-sourcehandler-pgtap-perl)"
  : !(await pgtapAvailable(adminUrl))
  ? "the pgtap extension is not installed on that server (Debian: postgresql-15-pgtap)"
  : null;
if (skipReason !== null) console.warn(`pgTAP tests skipped: ${skipReason}`);

const testFiles = (await Array.fromAsync(Deno.readDir(TESTS_DIR)))
  .filter((entry) => entry.isFile && entry.name.endsWith(".test.sql"))
  .map((entry) => entry.name)
  .sort();

Deno.test("each pgTAP file is in Supabase's format: one transaction, pgTAP from extensions", async () => {
  assert.ok(testFiles.length >= 4, testFiles.join(", "));
  for (const name of testFiles) {
    const sql = await Deno.readTextFile(new URL(name, TESTS_DIR));
    const statements = sql.split("\n").filter((line) => line.trim() && !line.startsWith("--"));
    assert.equal(statements[0], "begin;", name);
    assert.equal(
      statements[1],
      "create extension if not exists pgtap with schema extensions;",
      name,
    );
    assert.match(statements[2], /^select plan\(\d+\);$/, name);
    assert.deepEqual(statements.slice(-2), ["select * from finish();", "rollback;"], name);
  }
});

Deno.test({
  name: "pg_prove passes every supabase/tests/database file against the migrated schema",
  ignore: skipReason !== null,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const name = `wv_pgtap_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
    const admin = postgres(adminUrl!, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${name}`);
    const url = new URL(adminUrl!);
    url.pathname = `/${name}`;
    try {
      const db = await openDatabase({
        engine: "postgres",
        url: url.toString(),
        maxConnections: 1,
        prepare: false,
        queryTimeoutMs: 30_000,
      });
      try {
        await migrate(db);
        // What a Supabase project has: the extensions schema, usable by the API roles and on the
        // search_path, where pgTAP is installed.
        await db.execScript(`
          create schema if not exists extensions;
          grant usage on schema extensions to anon, authenticated, service_role;
          create extension if not exists pgtap with schema extensions;
          alter database ${name} set search_path = "$user", public, extensions;`);
      } finally {
        await db.close();
      }

      const args = ["-h", url.hostname, "-U", decodeURIComponent(url.username || "postgres")];
      if (url.port) args.push("-p", url.port);
      args.push("-d", name, ...testFiles.map((file) => new URL(file, TESTS_DIR).pathname));
      const env: Record<string, string> = {};
      if (url.password) env.PGPASSWORD = decodeURIComponent(url.password);
      const { code, stdout, stderr } = await new Deno.Command(pgProve!, { args, env }).output();
      const output = new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
      assert.equal(code, 0, output);
      assert.match(output, /All tests successful\./, output);
      // Every planned assertion ran: the sum of the files' plans.
      let planned = 0;
      for (const file of testFiles) {
        const text = await Deno.readTextFile(new URL(file, TESTS_DIR));
        planned += Number(/select plan\((\d+)\);/.exec(text)![1]);
      }
      assert.match(output, new RegExp(`Files=${testFiles.length}, Tests=${planned},`), output);
      assert.match(output, /Result: PASS/, output);
    } finally {
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end();
    }
  },
});
