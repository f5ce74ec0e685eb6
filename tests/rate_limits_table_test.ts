/**
 * One table of rate limits (functions/_shared/config/limits.ts): docs/operations.md shows that
 * table, and the environment's defaults and bounds are its.
 */
import assert from "node:assert/strict";
import { ENV_VARS } from "../functions/_shared/config/env-schema.ts";
import { parseConfig } from "../functions/_shared/config/config.ts";
import { RATE_LIMIT_RANGE, RATE_LIMITS } from "../functions/_shared/config/limits.ts";
import { generateDevKeys } from "../server/dev-keys.ts";

const ROOT = new URL("../", import.meta.url);

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
