/**
 * protocol/secret-types.ts is the single source of the seven secret types: the schema's
 * CHECK constraint (as written in the migrations and as the database holds it), the zod enums, the
 * GET answer's `secretTypes` and `providers`, and the README all agree with it.
 */
import assert from "node:assert/strict";
import { ServiceError } from "../functions/_shared/http/errors.ts";
import { providerReadiness } from "../protocol/provider-routing.ts";
import {
  PROVIDER_IDS,
  PROVIDERS,
  SECRET_TYPE_INFO,
  SECRET_TYPES,
  STEP_KINDS,
} from "../protocol/secret-types.ts";
import {
  parseDeleteRequest,
  parsePutRequest,
  parseRevealRequest,
} from "../functions/user-secrets/requests.ts";
import { readMigrations } from "../server/migrations.ts";
import { bearer, signIn, type TestApp } from "./support/app.ts";
import { describeWithDatabase } from "./support/suite.ts";

/** Names that are close to real types but are not in the registry. */
const NEAR_MISSES = [
  "provider_g_key",
  "PROVIDER_B_KEY",
  "provider_b_key ",
  "provider_a_org",
  "provider_e_api_key",
  "",
];

const quoted = (text: string) => [...text.matchAll(/'([^']*)'/g)].map((match) => match[1]);

/**
 * The values of the last `check (secret_type in (...))` in the migrations, in name order: a later
 * migration that widens the constraint would be the one in force.
 */
async function constraintInMigrations(): Promise<string[]> {
  let found: string[] | null = null;
  for (const migration of await readMigrations()) {
    for (const match of migration.sql.matchAll(/check\s*\(\s*secret_type\s+in\s*\(([^)]*)\)/gi)) {
      found = quoted(match[1]);
    }
  }
  assert.ok(found, "no CHECK (secret_type in (...)) found in supabase/migrations");
  return found;
}

async function randomWalletUser(app: TestApp): Promise<string> {
  const address = `0x${
    Array.from(crypto.getRandomValues(new Uint8Array(20)), (b) => b.toString(16).padStart(2, "0"))
      .join("")
  }`;
  const [{ id }] = await app.database.db.query<{ id: string }>(
    "insert into public.wallet_users (wallet_address) values ($1) returning id",
    [address],
  );
  return id;
}

async function list(app: TestApp, token?: string) {
  const response = await app.fetch("/api/secrets", token ? { headers: bearer(token) } : {});
  assert.equal(response.status, 200);
  return await response.json();
}

async function put(app: TestApp, token: string, secretType: string, value: string) {
  const response = await app.fetch("/api/secrets", {
    method: "PUT",
    headers: bearer(token, { "content-type": "application/json" }),
    body: JSON.stringify({ secretType, value }),
  });
  assert.equal(response.status, 200, await response.clone().text());
  await response.body?.cancel();
}

Deno.test("the registry holds the seven types of the spec, each with its provider", () => {
  assert.deepEqual(SECRET_TYPES, [
    "provider_a_api_key",
    "provider_a_org_id",
    "provider_b_key",
    "provider_c_key",
    "provider_d_key",
    "provider_e_key",
    "provider_f_api_key",
  ]);
  // Every type is required by exactly its own provider; provider_a_org_id goes with the A key.
  for (const type of SECRET_TYPES) {
    const owners = PROVIDER_IDS.filter((id) => PROVIDERS[id].requires.includes(type));
    assert.deepEqual(owners, [SECRET_TYPE_INFO[type].provider], type);
    assert.ok(SECRET_TYPE_INFO[type].purpose.length > 20, type);
  }
  assert.deepEqual(PROVIDERS.provider_a.requires, ["provider_a_api_key", "provider_a_org_id"]);
  for (const id of PROVIDER_IDS) {
    assert.ok(PROVIDERS[id].stepKinds.every((kind) => STEP_KINDS.includes(kind)), id);
  }
});

Deno.test("the migration's CHECK constraint lists exactly the registry's types", async () => {
  assert.deepEqual(await constraintInMigrations(), SECRET_TYPES);
});

Deno.test("the zod request schemas accept exactly the registry's types", () => {
  for (const secretType of SECRET_TYPES) {
    assert.deepEqual(parsePutRequest({ secretType, value: "value-1234" }), {
      secretType,
      value: "value-1234",
    });
    assert.deepEqual(parseDeleteRequest({ secretType }), { secretType });
    assert.deepEqual(parseRevealRequest({ secretTypes: [secretType] }), [secretType]);
  }
  // No body reads as {} (readOptionalJson): every type. JSON null is a body, and not an object.
  assert.deepEqual(parseRevealRequest({}), SECRET_TYPES);
  assert.throws(
    () => parseRevealRequest(null),
    (error) => error instanceof ServiceError && error.code === "invalid_request",
  );
  for (const secretType of NEAR_MISSES) {
    for (
      const parse of [
        () => parsePutRequest({ secretType, value: "value-1234" }),
        () => parseDeleteRequest({ secretType }),
        () => parseRevealRequest({ secretTypes: [secretType] }),
      ]
    ) {
      assert.throws(parse, (error) => {
        assert.ok(error instanceof ServiceError);
        assert.equal(error.code, "invalid_secret_type", JSON.stringify(secretType));
        assert.deepEqual(error.details?.allowedSecretTypes, SECRET_TYPES);
        return true;
      });
    }
  }
});

Deno.test("the README names no secret type the registry lacks, and all seven", async () => {
  const readme = await Deno.readTextFile(new URL("../README.md", import.meta.url));
  const named = new Set(readme.match(/\bprovider_[a-z]_[a-z_]*[a-z]\b/g) ?? []);
  assert.deepEqual([...named].filter((name) => !(SECRET_TYPES as string[]).includes(name)), []);
  assert.deepEqual(SECRET_TYPES.filter((type) => !named.has(type)), []);
});

describeWithDatabase("the registry in the database and the API", {
  async "pg_constraint holds a CHECK on user_secrets.secret_type with exactly the registry's types"(
    app,
  ) {
    const rows = await app.database.db.query<{ definition: string }>(
      `select pg_get_constraintdef(oid) as definition from pg_constraint
        where conrelid = 'public.user_secrets'::regclass and contype = 'c'
          and pg_get_constraintdef(oid) like '%secret_type%'`,
    );
    assert.equal(rows.length, 1, JSON.stringify(rows));
    assert.deepEqual(quoted(rows[0].definition), SECRET_TYPES);
  },

  async "the database stores every registry type and refuses any other"(app) {
    const userId = await randomWalletUser(app);
    const insert = (secretType: string) =>
      app.database.db.query(
        `insert into public.user_secrets (user_id, secret_type, ciphertext, iv, key_id)
         values ($1, $2, $3, $4, 'k1')`,
        [userId, secretType, new Uint8Array(32), new Uint8Array(12)],
      );
    for (const type of SECRET_TYPES) await insert(type);
    for (const type of NEAR_MISSES) {
      await assert.rejects(insert(type), (error: { code?: string }) => {
        assert.equal(error.code, "23514", `check_violation for ${JSON.stringify(type)}`);
        return true;
      });
    }
  },

  async "GET without a token has exactly the spec's fields, secretTypes from the registry"(app) {
    const body = await list(app);
    assert.deepEqual(Object.keys(body).sort(), [
      "configured",
      "project",
      "secretTypes",
      "secrets",
      "storage",
    ]);
    assert.deepEqual(body.secretTypes, SECRET_TYPES);
    assert.deepEqual(body.secrets, []);
  },

  async "GET with a token adds provider readiness derived from the stored types, names only"(app) {
    const { accessToken: token } = await signIn(app);
    const empty = await list(app, token);
    assert.deepEqual(Object.keys(empty).sort(), [
      "configured",
      "project",
      "providers",
      "secretTypes",
      "secrets",
      "storage",
    ]);
    assert.deepEqual(empty.secretTypes, SECRET_TYPES);
    assert.deepEqual(empty.providers, providerReadiness([]));

    const values = {
      provider_a_org_id: `org-${crypto.randomUUID()}`,
      provider_c_key: `c-${crypto.randomUUID()}`,
    };
    for (const [type, value] of Object.entries(values)) await put(app, token, type, value);
    const body = await list(app, token);
    assert.deepEqual(body.providers, providerReadiness(Object.keys(values)));
    const byId = Object.fromEntries(
      body.providers.map((p: { id: string; ready: boolean; missing: string[] }) => [p.id, p]),
    );
    assert.deepEqual(byId.provider_a.missing, ["provider_a_api_key"]);
    assert.equal(byId.provider_a.ready, false);
    assert.equal(byId.provider_c.ready, true);
    assert.deepEqual(byId.provider_c.stepKinds, ["image"]);
    const text = JSON.stringify(body);
    for (const value of Object.values(values)) assert.ok(!text.includes(value), "no value leaks");
  },
});
