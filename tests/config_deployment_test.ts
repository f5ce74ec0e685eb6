/**
 * Settings that decide who the service trusts (issue 30, item 8): the client-address header is one
 * a proxy sets to an address, development and test run only against a local stack, and production
 * lets in https pages only.
 */
import assert from "node:assert/strict";
import { FUNCTION_DEFAULTS, parseConfig } from "../functions/_shared/config/config.ts";
import { generateDevKeys } from "../server/dev-keys.ts";
import { problemsOf, productionEnv, productionProblems } from "./support/config-env.ts";

const HEADER_LIST = "CLIENT_IP_HEADER: must be one of x-forwarded-for, x-real-ip, " +
  "cf-connecting-ip, true-client-ip, fastly-client-ip, fly-client-ip, x-client-ip, " +
  "x-cluster-client-ip, x-appengine-user-ip (a header a trusted proxy sets to the client's address)";

/** The headers the refusal lists, which are the ones accepted (each is, below). */
const CLIENT_IP_HEADERS = /one of (.+) \(/.exec(HEADER_LIST)![1].split(", ");

Deno.test("CLIENT_IP_HEADER names a proxy's client-address header from a closed list, any case", () => {
  assert.equal(CLIENT_IP_HEADERS.length, 9);
  for (const header of CLIENT_IP_HEADERS) {
    const given = ` ${header.toUpperCase()} `;
    const env = { ...generateDevKeys(), CLIENT_IP_HEADER: given };
    assert.equal(parseConfig(env).clientIp.header, header);
    assert.equal(parseConfig(productionEnv({ CLIENT_IP_HEADER: given })).clientIp.header, header);
  }
});

Deno.test("CLIENT_IP_HEADER refuses any other header, a credential's above all, in every mode", () => {
  const others = [
    "authorization",
    "cookie",
    "x-service-server-secret",
    "host",
    "apikey",
    "origin",
    "x-forwarded-host",
    "forwarded",
    "x-forwarded",
    "user-agent",
    "x-request-id",
  ];
  for (const header of others) {
    assert.deepEqual(problemsOf({ ...generateDevKeys(), CLIENT_IP_HEADER: header }), [
      HEADER_LIST,
    ]);
    assert.deepEqual(problemsOf(productionEnv({ CLIENT_IP_HEADER: header })), [HEADER_LIST]);
  }
});

/** What Supabase gives a function of a hosted project, and a local stack's equivalents. */
const HOSTED = {
  SUPABASE_URL: "https://abcdefghijklmnopqrst.supabase.co",
  SUPABASE_DB_URL: "postgresql://postgres:pw@db.abcdefghijklmnopqrst.supabase.co:5432/postgres",
};

const notLocal = (appEnv: string, name: string) =>
  `APP_ENV=${appEnv} runs only against a local stack, but ${name} is not local (loopback or a ` +
  "container name); a hosted project or remote database needs APP_ENV=production";

Deno.test("development and test refuse a hosted Supabase project, naming the setting and not its value", () => {
  for (const appEnv of ["development", "test"]) {
    for (const defaults of [undefined, FUNCTION_DEFAULTS]) {
      const env = { ...generateDevKeys(), APP_ENV: appEnv };
      assert.deepEqual(
        problemsOf({ ...env, ...HOSTED }),
        [notLocal(appEnv, "SUPABASE_URL"), notLocal(appEnv, "SUPABASE_DB_URL")],
      );
      assert.throws(() => parseConfig({ ...env, ...HOSTED }, defaults), (error) => {
        assert.ok(!String(error).includes("abcdefghijklmnopqrst"), "the project ref was quoted");
        return true;
      });
    }
  }
  // The same environment in production is what a deployed function is meant to run with.
  const { DATABASE_URL: _, ...deployed } = productionEnv(HOSTED);
  assert.equal(parseConfig(deployed, FUNCTION_DEFAULTS).projectName, "abcdefghijklmnopqrst");
});

Deno.test("development runs only where every project and database URL is loopback or a container", () => {
  const refused: [string, string][] = [
    ["SUPABASE_URL", "https://abcdefghijklmnopqrst.supabase.in"],
    ["SUPABASE_URL", "https://api.example.com"],
    ["SUPABASE_URL", "http://10.0.0.5:8000"],
    ["SUPABASE_URL", "http://0.0.0.0:54321"],
    ["SUPABASE_URL", "http://[2001:db8::1]:54321"],
    ["DATABASE_URL", "postgres://postgres.ref:pw@aws-0-eu-central-1.pooler.supabase.com:6543/db"],
    ["DATABASE_URL", "postgres://vault@db.internal:5432/vault"],
    ["SUPABASE_DB_URL", "postgresql://postgres:pw@203.0.113.9:5432/postgres"],
  ];
  for (const [name, url] of refused) {
    assert.deepEqual(problemsOf({ ...generateDevKeys(), [name]: url }), [
      notLocal("development", name),
    ], url);
  }
  // `supabase functions serve` gives http://kong:8000 and a database at db; the local server and
  // the tests use loopback; Docker reaches the host machine by name.
  const accepted: [string, string][] = [
    ["SUPABASE_URL", "http://kong:8000"],
    ["SUPABASE_URL", "http://127.0.0.1:54321"],
    ["SUPABASE_URL", "http://localhost:54321"],
    ["SUPABASE_URL", "http://[::1]:54321"],
    ["SUPABASE_URL", "http://wallet-vault.localhost:54321"],
    ["SUPABASE_DB_URL", "postgresql://postgres:postgres@db:5432/postgres"],
    ["DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres"],
    ["DATABASE_URL", "postgres://postgres@host.docker.internal:54322/postgres"],
    ["DATABASE_URL", "postgres://postgres@localhost/postgres?host=/var/run/postgresql"],
  ];
  for (const [name, url] of accepted) {
    assert.equal(parseConfig({ ...generateDevKeys(), [name]: url }).appEnv, "development", url);
  }
});

Deno.test("production lets in https origins only", () => {
  const https = "ALLOWED_ORIGINS must hold https origins in production (no http://)";
  for (
    const origins of [
      "http://app.example.com",
      "https://app.example.com, http://app.example.com",
      "http://192.0.2.10:3000",
    ]
  ) {
    assert.deepEqual(productionProblems({ ALLOWED_ORIGINS: origins }), [https], origins);
  }
  assert.deepEqual(
    parseConfig(
      productionEnv({ ALLOWED_ORIGINS: "https://app.example.com,https://192.0.2.10:8443" }),
    )
      .allowedOrigins,
    ["https://app.example.com", "https://192.0.2.10:8443"],
  );
});

Deno.test("production lets in no loopback page, over https neither", () => {
  const https = "ALLOWED_ORIGINS must hold https origins in production (no http://)";
  const loopback = "ALLOWED_ORIGINS must name no loopback origin in production (localhost, " +
    "127.0.0.0/8, [::1]), https ones included";
  for (
    const origins of [
      "https://localhost",
      "https://localhost:3000",
      "https://127.0.0.1",
      "https://127.8.9.10:8443",
      "https://[::1]",
      "https://[::1]:3000",
      "https://[::ffff:127.0.0.1]",
      "https://app.localhost",
      "https://app.example.com, https://localhost:5173",
    ]
  ) {
    assert.deepEqual(productionProblems({ ALLOWED_ORIGINS: origins }), [loopback], origins);
  }
  for (const origins of ["http://localhost:3000", "http://127.0.0.1:54321", "http://[::1]:3000"]) {
    assert.deepEqual(productionProblems({ ALLOWED_ORIGINS: origins }), [https, loopback], origins);
  }
  // A name that merely resolves to loopback is not told apart from any other host.
  assert.deepEqual(
    parseConfig(productionEnv({ ALLOWED_ORIGINS: "https://127.0.0.1.nip.io" })).allowedOrigins,
    ["https://127.0.0.1.nip.io"],
  );
});

Deno.test("a database URL whose host the driver reads otherwise than the URL parser is refused in every mode, naming only the setting", () => {
  // The URL parser takes the host after the last @, the driver after the first, splitting it at
  // commas into hosts it tries in turn and decoding %-escapes: each of these reaches evil.example
  // while the parser (and so the local-stack check) sees a local host.
  const misread = [
    "postgres://u:p@evil.example,x@localhost/db",
    "postgres://u:p@evil.example:5432,x@127.0.0.1:5432/db",
    "postgresql://u@evil.example@localhost/db",
    "postgres://u:p@localhost,evil.example/db",
    "postgres://u:p@db,evil.example:5432/postgres",
    "postgres://u:p@kong%2Cevil%2Eexample/db",
    "postgres://u:p@evil%2Eexample:5432/db",
  ];
  for (const name of ["DATABASE_URL", "SUPABASE_DB_URL"]) {
    const oneHost = `${name} is not a valid URL: give one host, and percent-encode any of ` +
      "# / ? % @ , in the user name and password";
    for (const url of misread) {
      for (const env of [{ ...generateDevKeys(), [name]: url }, productionEnv({ [name]: url })]) {
        if (name === "SUPABASE_DB_URL") delete (env as Record<string, string>).DATABASE_URL;
        // (Development may add that the host the URL parser sees is not local either.)
        const problems = problemsOf(env);
        assert.equal(problems[0], oneHost, url);
        assert.ok(!problems.some((problem) => problem.includes("evil")), url);
      }
    }
  }
  // An @ or , percent-encoded in the password is the password's.
  const encoded = "postgres://u:p%40evil.example%2Cx@localhost/db";
  assert.equal(parseConfig({ ...generateDevKeys(), DATABASE_URL: encoded }).appEnv, "development");
  assert.equal(parseConfig(productionEnv({ DATABASE_URL: encoded })).appEnv, "production");
});
