/**
 * One table of rate limits (functions/_shared/config/limits.ts): docs/operations.md shows that
 * table, the environment's defaults and bounds are its, and no bucket is named anywhere else, in
 * the TypeScript nor in the database's current functions (older migrations are history: what runs
 * is pg_proc's source).
 */
import assert from "node:assert/strict";
import { ENV_VARS } from "../functions/_shared/config/env-schema.ts";
import { parseConfig } from "../functions/_shared/config/config.ts";
import { RATE_LIMIT_RANGE, RATE_LIMITS } from "../functions/_shared/config/limits.ts";
import { generateDevKeys } from "../server/dev-keys.ts";
import { openTestDatabase, testEngines } from "./support/database.ts";

const ROOT = new URL("../", import.meta.url);
const TABLE_FILE = "functions/_shared/config/limits.ts";

const BUCKETS = Object.values(RATE_LIMITS).flatMap((limit) =>
  Object.values(limit.buckets).map((bucket) => ({ limit, bucket }))
);

/** The cells of the table under `### Rate limits` in docs/operations.md, header and rule left out. */
async function documentedRows(): Promise<string[][]> {
  const text = await Deno.readTextFile(new URL("docs/operations.md", ROOT));
  const section = text.split(/^### Rate limits$/m)[1]?.split(/^#/m)[0] ?? "";
  const rows = section.split("\n").filter((line) => line.startsWith("|"));
  return rows.slice(2).map((row) => row.slice(1, -1).split("|").map((cell) => cell.trim()));
}

/** Every .ts file under `dir` (relative to the repository), skipping built and installed code. */
async function* typeScriptFiles(dir: string): AsyncGenerator<string> {
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(new URL(dir, ROOT)));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return; // a folder another change may not have yet
    throw error;
  }
  for (const entry of entries) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory && !["node_modules", "dist"].includes(entry.name)) {
      yield* typeScriptFiles(path);
    } else if (entry.isFile && entry.name.endsWith(".ts")) {
      yield path;
    }
  }
}

/** The product's TypeScript, path and text: what runs, deployed or as an operator's command. */
async function productSources(): Promise<{ path: string; text: string }[]> {
  const sources = [];
  for (const dir of ["functions", "server", "scripts", "protocol", "sdk", "client"]) {
    for await (const path of typeScriptFiles(dir)) {
      sources.push({ path, text: await Deno.readTextFile(new URL(path, ROOT)) });
    }
  }
  return sources;
}

/** Where `needle` occurs in `sources`, one entry per occurrence. */
function occurrences(sources: { path: string; text: string }[], needle: string): string[] {
  return sources.flatMap(({ path, text }) => text.split(needle).slice(1).map(() => path));
}

Deno.test("docs/operations.md's table of rate limits is limits.ts's, row for row", async () => {
  const expected = BUCKETS.map(({ limit, bucket }) => [
    `\`${limit.variable}\``,
    `\`${limit.default}\``,
    `${limit.windowSeconds} s`,
    `\`${bucket.prefix}${bucket.key}\``,
    bucket.counts,
  ]);
  assert.deepEqual(await documentedRows(), expected);
});

Deno.test("every rate limit's variable takes its default and bounds from the table", () => {
  const config = parseConfig({ ...generateDevKeys() });
  for (const [name, limit] of Object.entries(RATE_LIMITS)) {
    const spec = ENV_VARS[limit.variable];
    assert.deepEqual(
      [spec.kind, spec.fallback, spec.min, spec.max],
      ["integer", limit.default, RATE_LIMIT_RANGE.min, RATE_LIMIT_RANGE.max],
      limit.variable,
    );
    assert.equal(config.rateLimits[name as keyof typeof RATE_LIMITS], limit.default, name);
  }
  const set = parseConfig({ ...generateDevKeys(), RATE_LIMIT_PROOF_PER_ADDRESS_PER_MINUTE: "7" });
  assert.equal(set.rateLimits.proofPerAddressPerMinute, 7);
  const variables = Object.keys(ENV_VARS).filter((name) => name.startsWith("RATE_LIMIT_"));
  assert.deepEqual(
    variables.sort(),
    Object.values(RATE_LIMITS).map((limit) => limit.variable).sort(),
    "a RATE_LIMIT_ variable outside the table",
  );
});

Deno.test("every bucket keeps the name it counts under in deployed databases", () => {
  // A renamed bucket starts from zero on deploy (its old windows are no longer read): a change
  // here is a decision, not a tidy-up.
  assert.deepEqual(BUCKETS.map(({ bucket }) => bucket.prefix), [
    "nonce:ip:",
    "proof:ip:",
    "proof:address:",
    "confirm:user:",
    "refresh:ip:",
    "vault:write:",
    "vault:lock:",
    "vault:export:",
    "vault:reveal:user:",
    "vault:reveal:token:",
    "vault:reveal:wrong-token:ip:",
    "vault:reveal:refused:user:",
    "rpc:ip:",
    "rpc:address:",
    "rpc:address-ip:",
  ]);
});

Deno.test("every bucket is named once in the TypeScript, in the table", async () => {
  const sources = await productSources();
  assert.ok(sources.some(({ path }) => path === TABLE_FILE), "the table was not read");
  const prefixes = BUCKETS.map(({ bucket }) => bucket.prefix);
  assert.equal(new Set(prefixes).size, prefixes.length, "two buckets share a prefix");
  for (const prefix of prefixes) {
    assert.deepEqual(occurrences(sources, prefix), [TABLE_FILE], prefix);
  }
});

/**
 * A literal shaped like a bucket's prefix (`word:word:`, as every bucket's is). URNs have that
 * shape too: sign-out's message lists sessions as `urn:uuid:…` (EIP-4361 resources).
 */
const BUCKET_SHAPED = /["'`]([a-z]+(?:-[a-z]+)*:(?:[a-z]+(?:-[a-z]+)*:)+)/g;
const NOT_BUCKETS = new Set(["urn:uuid:"]);

Deno.test("no bucket outside the table is named in functions/, even one the table lacks", async () => {
  const sources = (await productSources()).filter(({ path }) =>
    path.startsWith("functions/") && path !== TABLE_FILE
  );
  const named = sources.flatMap(({ path, text }) =>
    [...text.matchAll(BUCKET_SHAPED)].map((match) => `${path}: ${match[1]}`)
      .filter((hit) => !NOT_BUCKETS.has(hit.slice(hit.indexOf(": ") + 2)))
  );
  assert.deepEqual(named, []);
});

/** A quoted SQL literal ending in a colon after a word: a bucket's prefix written in SQL. */
const SQL_BUCKET_SHAPED = /'[a-z]+(?:-[a-z]+)*(?::[a-z]+(?:-[a-z]+)*)*:'/gi;

for (const engine of testEngines()) {
  Deno.test({
    name: `no database function names a bucket: each is handed its bucket or prefix [${engine}]`,
    sanitizeOps: false,
    sanitizeResources: false,
    async fn() {
      const { db, close } = await openTestDatabase(engine);
      try {
        const functions = await db.query<{ name: string; source: string }>(
          `select n.nspname || '.' || p.proname as name, p.prosrc as source
             from pg_proc p join pg_namespace n on n.oid = p.pronamespace
            where n.nspname not in ('pg_catalog', 'information_schema')
              -- the migrations' own: an extension's functions (pgcrypto's) are not ours to judge
              and not exists (select 1 from pg_depend d
                               where d.classid = 'pg_proc'::regclass and d.objid = p.oid
                                 and d.deptype = 'e')`,
        );
        const counting = functions.filter(({ source }) => source.includes("hit_rate_limit("));
        // The functions that count: if none were found, the check below would pass on nothing.
        assert.ok(counting.length >= 10, `only ${counting.length} functions count a limit`);
        const named = functions.flatMap(({ name, source }) => [
          ...BUCKETS.filter(({ bucket }) => source.includes(bucket.prefix))
            .map(({ bucket }) => `${name}: ${bucket.prefix}`),
          ...[...source.matchAll(SQL_BUCKET_SHAPED)].map((match) => `${name}: ${match[0]}`),
        ]);
        assert.deepEqual(named, []);
      } finally {
        await close();
      }
    },
  });
}
