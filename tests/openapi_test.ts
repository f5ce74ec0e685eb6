/**
 * The OpenAPI description: docs/openapi.json is what the code generates, a maintained validator
 * finds no error in it, the api function serves it (locally and deployed), every route is in it,
 * its examples fit its schemas, the contract check (tests/support/contract.ts, which every
 * in-process test's answers pass through) fails what the description does not say, the local
 * server's 408 is described, and a client generated from it with openapi-typescript agrees with
 * the client package's own types.
 */
import assert from "node:assert/strict";
import SwaggerParser from "@apidevtools/swagger-parser";
import openapiTS, { astToString } from "openapi-typescript";
import { API_ROUTES, createDeployedApiHandler } from "../functions/api/handler.ts";
import { ERROR_STATUS } from "../protocol/error-codes.ts";
import { silentLogger } from "./support/log.ts";
import { serve } from "../functions/_shared/http/serve.ts";
import { MAX_BODY_BYTES } from "../functions/_shared/http/bodies.ts";
import { atEdge } from "../server/app.ts";
import { serveWithLimits } from "../server/connection-limits.ts";
import { OPENAPI_FILE, openApiText } from "../scripts/lib/openapi-file.ts";
import { bearer, signIn, startTestApp } from "./support/app.ts";
import {
  checkAnswer,
  contractViolation,
  type Exchange,
  schemaProblems,
} from "./support/contract.ts";
import { describeWithDatabase } from "./support/suite.ts";

type Json = Record<string, unknown>;

const ROOT = new URL("../", import.meta.url);
const committedText = () => Deno.readTextFileSync(OPENAPI_FILE);
interface Document {
  readonly openapi: string;
  readonly paths: Record<string, Json>;
  readonly components: { readonly schemas: Record<string, Json> } & Json;
}
const committed = (): Document => JSON.parse(committedText());
const METHODS = ["get", "head", "post", "put", "delete"] as const;
const JSON_HEADERS = { "content-type": "application/json; charset=utf-8" };

Deno.test("docs/openapi.json is the document the code generates (deno task openapi writes it)", () => {
  assert.ok(
    committedText() === openApiText(),
    "docs/openapi.json is out of date: run `deno task openapi` and commit it",
  );
});

Deno.test("@apidevtools/swagger-parser validates the description as OpenAPI 3.1 with no error", async () => {
  const document = committed();
  assert.equal(document.openapi, "3.1.0");
  // It throws on the first schema or reference error; it resolves the document when there is none.
  const api = await SwaggerParser.validate(structuredClone(document) as never);
  assert.equal(api.info.title, "Wallet vault");
});

Deno.test("every error code is in the ErrorCode enum with its status, and has its own error body", () => {
  const { components } = committed();
  const errorCode = components.schemas.ErrorCode;
  assert.deepEqual(errorCode.enum, Object.keys(ERROR_STATUS));
  assert.deepEqual(errorCode["x-status"], ERROR_STATUS);
  const bodies = Object.values(components.schemas).filter((schema) =>
    (schema.description as string | undefined)?.startsWith("The body of a ")
  );
  assert.equal(bodies.length, Object.keys(ERROR_STATUS).length);
});

Deno.test("every /api route, and each function's, is described, with its security", () => {
  const { paths } = committed();
  for (const [apiPath, [functionName, functionPath]] of Object.entries(API_ROUTES)) {
    assert.ok(paths[`/api${apiPath}`], `/api${apiPath} is not described`);
    assert.ok(
      paths[`/functions/v1/${functionName}${functionPath}`],
      `/functions/v1/${functionName}${functionPath} is not described`,
    );
  }
  assert.ok(paths["/api/openapi.json"]);
  const reveal = paths["/api/secrets/reveal"].post as Json;
  assert.deepEqual(reveal.security, [{ bearer: [], revealToken: [] }]);
  const schemes = committed().components.securitySchemes as Record<string, Json>;
  assert.deepEqual(schemes.revealToken, {
    type: "apiKey",
    in: "header",
    name: "x-service-server-secret",
    description: schemes.revealToken.description,
  });
  assert.equal(schemes.bearer.scheme, "bearer");
});

/** Redocly CLI from npm, at this version (.ci/run fetches it into npm's cache beforehand). */
const REDOCLY_CLI = "@redocly/cli@2.77.0";

Deno.test("Redocly's recommended rules find no error and no warning in the description (redocly.yaml)", async () => {
  const { code, stdout, stderr } = await new Deno.Command("npx", {
    args: ["-y", REDOCLY_CLI, "lint", "--config", "redocly.yaml", "--format", "json"],
    cwd: ROOT.pathname,
    env: { NO_COLOR: "1", REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(stdout);
  const report = JSON.parse(text.slice(text.indexOf("{"))) as {
    totals: { errors: number; warnings: number; ignored: number };
    problems: { ruleId: string; message: string; location: { pointer: string }[] }[];
  };
  const problems = report.problems.map((problem) =>
    `${problem.ruleId} at ${problem.location[0]?.pointer}: ${problem.message}`
  );
  // redocly.yaml lists (with a reason) any warning accepted; none is, nor ignored.
  assert.deepEqual(problems.slice(0, 20), [], `${problems.length} problems`);
  assert.deepEqual(report.totals, { errors: 0, warnings: 0, ignored: 0 });
  assert.equal(code, 0, new TextDecoder().decode(stderr));
});

Deno.test("every operation states its security, the public ones as none (security: [])", () => {
  const { paths } = committed();
  const open: string[] = [];
  for (const [path, item] of Object.entries(paths)) {
    for (const method of METHODS) {
      const operation = item[method] as Json | undefined;
      if (operation === undefined) continue;
      assert.ok(Array.isArray(operation.security), `${method} ${path} states no security`);
      if ((operation.security as unknown[]).length === 0) open.push(`${method} ${path}`);
    }
  }
  const publicRoutes = [
    "/api/auth/nonce",
    "/api/auth/wallet-proof",
    "/api/auth/refresh",
    "/functions/v1/wallet-proof/nonce",
    "/functions/v1/wallet-proof",
    "/functions/v1/wallet-proof/refresh",
  ].map((path) => `post ${path}`);
  for (const route of publicRoutes) assert.ok(open.includes(route), `${route} is not public`);
  assert.ok(open.includes("get /api/openapi.json"));
  assert.ok(!open.some((route) => route.includes("/secrets")), "a secrets route is public");
});

Deno.test("the servers resolve, against wherever the document is served, to where its paths answer", () => {
  const document = committed() as Document & { servers: { url: string }[] };
  // The document's URL → the root its /api paths are below (the functions' root deployed).
  const servedAt: Record<string, string> = {
    "http://127.0.0.1:8123/api/openapi.json": "http://127.0.0.1:8123",
    "http://127.0.0.1:8123/functions/v1/api/openapi.json": "http://127.0.0.1:8123/functions/v1",
    "https://ref.supabase.co/functions/v1/api/openapi.json": "https://ref.supabase.co/functions/v1",
  };
  for (const [documentUrl, apiRoot] of Object.entries(servedAt)) {
    const origin = new URL(documentUrl).origin;
    for (const [path, item] of Object.entries(document.paths)) {
      const servers = (item.servers ?? document.servers) as { url: string }[];
      assert.equal(servers.length, 1, `${path}: one server, relative to the document`);
      // A server URL ends without a slash; the path is appended to it (OpenAPI 3.1, 4.8.1).
      const base = new URL(servers[0].url, documentUrl).href.replace(/\/$/, "");
      const expected = path.startsWith("/api/") ? `${apiRoot}${path}` : `${origin}${path}`;
      assert.equal(`${base}${path}`, expected, `${path} from ${documentUrl}`);
    }
  }
});

Deno.test("every example in the description fits the schema beside it", () => {
  const { paths } = committed();
  let examples = 0;
  for (const [path, item] of Object.entries(paths)) {
    for (const method of METHODS) {
      const operation = item[method] as Json | undefined;
      if (operation === undefined) continue;
      const base = `/paths/${path.replaceAll("/", "~1")}/${method}`;
      const media: [string, Json][] = [];
      const requestBody = operation.requestBody as { content?: Record<string, Json> } | undefined;
      if (requestBody?.content?.["application/json"]) {
        media.push([`${base}/requestBody`, requestBody.content["application/json"]]);
      }
      for (const [status, response] of Object.entries(operation.responses as Json)) {
        const content = (response as { content?: Record<string, Json> }).content;
        if (content?.["application/json"]) {
          media.push([`${base}/responses/${status}`, content["application/json"]]);
        }
      }
      for (const [at, type] of media) {
        const values = [
          ...("example" in type ? [type.example] : []),
          ...Object.values((type.examples ?? {}) as Record<string, { value: unknown }>).map((e) =>
            e.value
          ),
        ];
        for (const value of values) {
          examples++;
          const problem = schemaProblems(`${at}/content/application~1json/schema`, value);
          assert.equal(problem, null, `the example at ${at} does not fit its schema`);
        }
      }
    }
  }
  assert.ok(examples > 20, `only ${examples} examples were found`);
});

/** An exchange for the contract check: a JSON body. */
function exchange(method: string, path: string, status: number, body: unknown, headers = {}) {
  return {
    method,
    url: `http://127.0.0.1:54321${path}`,
    status,
    headers: new Headers({ ...JSON_HEADERS, ...headers }),
    body: body === undefined ? "" : JSON.stringify(body),
  } satisfies Exchange;
}

const STATUS = {
  configured: true,
  project: "p",
  storage: "pglite:public.user_secrets",
  secretTypes: ["provider_b_key"],
  secrets: [],
};

Deno.test("the contract check fails an answer the description does not describe", async (t) => {
  await t.step("a described answer passes, at /api and at the function's own URL", () => {
    assert.equal(contractViolation(exchange("GET", "/api/secrets", 200, STATUS)), null);
    assert.equal(
      contractViolation(exchange("GET", "/functions/v1/user-secrets/", 200, STATUS)),
      null,
    );
    assert.equal(contractViolation(exchange("HEAD", "/api/secrets", 200, undefined)), null);
  });
  await t.step("an undescribed field", () => {
    const violation = contractViolation(exchange("GET", "/api/secrets", 200, { ...STATUS, x: 1 }));
    assert.match(violation ?? "", /must NOT have additional properties/);
  });
  await t.step("an undescribed status", () => {
    const violation = contractViolation(exchange("GET", "/api/secrets", 201, STATUS));
    assert.match(violation ?? "", /the status is not described/);
  });
  await t.step("a code the status does not list, and a detail its code does not carry", () => {
    const revoked = { error: { code: "session_revoked", message: "m" } };
    assert.equal(contractViolation(exchange("POST", "/api/auth/logout", 401, revoked)), null);
    // Not an answer of the nonce route, though 401 is one of its statuses.
    assert.match(
      contractViolation(exchange("POST", "/api/auth/nonce", 401, revoked)) ?? "",
      /error code session_revoked/,
    );
    const detailed = { error: { ...revoked.error, maxBytes: 1 } };
    assert.notEqual(contractViolation(exchange("POST", "/api/auth/logout", 401, detailed)), null);
  });
  await t.step("a required header missing, a body where none is described, one not JSON", () => {
    const limited = { error: { code: "rate_limited", message: "m", retryAfterSeconds: 3 } };
    assert.match(
      contractViolation(exchange("POST", "/api/auth/nonce", 429, limited)) ?? "",
      /no Retry-After header/,
    );
    assert.equal(
      contractViolation(exchange("POST", "/api/auth/nonce", 429, limited, { "retry-after": "3" })),
      null,
    );
    assert.match(
      contractViolation(exchange("POST", "/api/auth/logout", 204, {})) ?? "",
      /a body where none is described/,
    );
    const text = { ...exchange("GET", "/api/secrets", 200, undefined), body: "ok" };
    assert.match(contractViolation(text) ?? "", /not JSON/);
  });
  await t.step("a path not described is its 404, a method not taken its 405 with Allow", () => {
    const notFound = { error: { code: "not_found", message: "No such route." } };
    assert.equal(contractViolation(exchange("GET", "/api/nothing", 404, notFound)), null);
    assert.match(
      contractViolation(exchange("GET", "/api/nothing", 200, STATUS)) ?? "",
      /expected 404/,
    );
    const refused = { error: { code: "method_not_allowed", message: "Use POST." } };
    assert.equal(
      contractViolation(exchange("GET", "/api/auth/nonce", 405, refused, { allow: "POST" })),
      null,
    );
    assert.match(
      contractViolation(exchange("GET", "/api/auth/nonce", 405, refused)) ?? "",
      /no Allow header/,
    );
  });
  await t.step("pages outside /api and /functions/v1 are not the API's", () => {
    const page = { ...exchange("GET", "/settings", 200, undefined), body: "<!doctype html>" };
    assert.equal(contractViolation(page), null);
  });
  await t.step("a test's app fails where the answer is received", async () => {
    const answer = new Response(JSON.stringify({ ...STATUS, value: "sk-…" }), {
      headers: JSON_HEADERS,
    });
    await assert.rejects(
      checkAnswer({ method: "GET", url: "http://127.0.0.1:54321/api/secrets" }, answer),
      /must NOT have additional properties/,
    );
  });
});

describeWithDatabase("the description served by the api function", {
  async "GET /api/openapi.json answers the committed document, readable from any origin"(app) {
    const response = await app.fetch("/api/openapi.json", {
      headers: { origin: "https://catalogue.example" },
    });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("access-control-allow-origin"), "*");
    assert.deepEqual(await response.json(), committed());
    const head = await app.fetch("/functions/v1/api/openapi.json", { method: "HEAD" });
    assert.equal(head.status, 200);
    await head.body?.cancel();
  },

  async "deployed, the api function serves it below its own name"(app) {
    const deployed = serve(createDeployedApiHandler(app.context), {
      allowedOrigins: ["https://app.example"],
    }, silentLogger);
    const response = await deployed(
      new Request("https://project.supabase.co/api/openapi.json", {
        headers: { origin: "https://catalogue.example" },
      }),
    );
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("access-control-allow-origin"), "*");
    assert.deepEqual(await response.json(), committed());
  },

  async "each described operation is routed: none answers 404 or 405"(app) {
    for (const [path, item] of Object.entries(committed().paths)) {
      for (const method of METHODS) {
        if (item[method] === undefined) continue;
        const response = await app.fetch(path, { method: method.toUpperCase() });
        assert.ok(
          response.status !== 404 && response.status !== 405,
          `${method.toUpperCase()} ${path} answered ${response.status}`,
        );
        await response.body?.cancel();
      }
    }
  },

  async "a body over the limit is the described 413 payload_too_large"(app) {
    const { accessToken } = await signIn(app);
    const response = await app.fetch("/api/secrets", {
      method: "PUT",
      headers: bearer(accessToken, { "content-type": "application/json" }),
      body: JSON.stringify({ secretType: "provider_b_key", value: "x".repeat(MAX_BODY_BYTES) }),
    });
    // app.fetch checks the answer against the description; this is what it was.
    assert.equal(response.status, 413);
    assert.equal((await response.json()).error.maxBytes, MAX_BODY_BYTES);
  },
});

Deno.test("the local server's 408 for a body that does not arrive in time is the described request_timeout", async () => {
  const app = await startTestApp("pglite");
  const server = serveWithLimits(
    { hostname: "127.0.0.1", port: 0, limits: { bodyTimeoutMs: 300 } },
    atEdge(app.app.handler, app.config.clientIp),
  );
  const stalled = new AbortController();
  try {
    const url = `http://127.0.0.1:${server.addr.port}/api/auth/refresh`;
    // One byte of the body, then nothing: the server answers before the body ends.
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("{"));
      },
    });
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      signal: stalled.signal,
    });
    assert.equal(response.status, 408);
    await checkAnswer({ method: "POST", url }, response);
    assert.equal((await response.json()).error.code, "request_timeout");
  } finally {
    stalled.abort();
    await server.shutdown();
    await app.close();
  }
});

/** Writes `files` into a new directory; its path. */
async function scratch(files: Record<string, string>): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "openapi-client-" });
  for (const [name, text] of Object.entries(files)) {
    await Deno.writeTextFile(`${dir}/${name}`, text);
  }
  return dir;
}

/** `deno check` of `file` with the project's configuration; its output when it fails. */
async function denoCheck(file: string): Promise<{ success: boolean; output: string }> {
  const { success, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["check", "--config", `${ROOT.pathname}deno.json`, file],
    cwd: ROOT.pathname,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { success, output: decode(stdout) + decode(stderr) };
}

/**
 * The answers' types from the generated `paths`, against the client package's own types, each way
 * (readonly, as `--immutable` generates); the `@ts-expect-error` lines fail the check if the
 * generated types were loose enough to accept anything.
 */
const AGREEMENT = (sdk: string) => `
import type { components, paths } from "./schema.d.ts";
import type {
  AccountDeleteResult,
  AccountExport,
  ActivityPage,
  DeleteResult,
  ErrorCode,
  FreshSignatureRequest,
  LockState,
  MaskedSecret,
  RevealedSecret,
  SaveResult,
  SecretsStatus,
  SessionsList,
  SignOutSessionsResult,
  UnlockResult,
} from "${sdk}types.ts";
import type { NonceResponse } from "${sdk}sign-in-message.ts";

type Body<R> = R extends { readonly content: { readonly "application/json": infer B } } ? B
  : never;
type Ok<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends
  { readonly responses: { readonly 200: infer R } } ? Body<R> : never;

declare const list: Ok<"/api/secrets", "get">;
declare const save: Ok<"/api/secrets", "put">;
declare const removed: Ok<"/api/secrets", "delete">;
declare const reveal: Ok<"/api/secrets/reveal", "post">;
declare const nonce: Ok<"/api/auth/nonce", "post">;
declare const code: components["schemas"]["ErrorCode"];
declare const masked: components["schemas"]["MaskedSecret"];

export const fromService: [
  SecretsStatus,
  SaveResult,
  DeleteResult,
  RevealedSecret,
  MaskedSecret,
  ErrorCode,
  NonceResponse,
] = [list, save, removed, reveal.secrets[0], masked, code, nonce];

declare const sdkStatus: SecretsStatus;
declare const sdkSave: SaveResult;
declare const sdkDelete: DeleteResult;
declare const sdkRevealed: RevealedSecret;
declare const sdkMasked: MaskedSecret;
declare const sdkCode: ErrorCode;
export const fromPackage: [
  typeof list,
  typeof save,
  typeof removed,
  typeof reveal.secrets[0],
  typeof masked,
  typeof code,
] = [sdkStatus, sdkSave, sdkDelete, sdkRevealed, sdkMasked, sdkCode];

// @ts-expect-error created is a boolean
export const notAString: string = save.created;
// @ts-expect-error a code the service does not have
export const notACode: typeof code = "no_such_code";

// The creator controls' answers (the browser client's controls), each way.
declare const activity: Ok<"/api/secrets/activity", "get">;
declare const sessions: Ok<"/api/auth/sessions", "get">;
declare const signedOut: Ok<"/api/auth/sessions/sign-out", "post">;
declare const lockState: Ok<"/api/secrets/lock", "get">;
declare const locked: Ok<"/api/secrets/lock", "post">;
declare const unlocked: Ok<"/api/secrets/unlock", "post">;
declare const exported: Ok<"/api/account/export", "get">;
declare const deleted: Ok<"/api/account", "delete">;
declare const confirm: Ok<"/api/auth/confirm/nonce", "post">;

export const controlsFromService: [
  ActivityPage,
  SessionsList,
  SignOutSessionsResult,
  LockState,
  LockState,
  UnlockResult,
  AccountExport,
  AccountDeleteResult,
  FreshSignatureRequest,
] = [activity, sessions, signedOut, lockState, locked, unlocked, exported, deleted, confirm];

declare const sdkActivity: ActivityPage;
declare const sdkSessions: SessionsList;
declare const sdkSignedOut: SignOutSessionsResult;
declare const sdkLock: LockState;
declare const sdkUnlocked: UnlockResult;
declare const sdkExport: AccountExport;
declare const sdkDeleted: AccountDeleteResult;
declare const sdkConfirm: FreshSignatureRequest;
export const controlsFromPackage: [
  typeof activity,
  typeof sessions,
  typeof signedOut,
  typeof lockState,
  typeof locked,
  typeof unlocked,
  typeof exported,
  typeof deleted,
  typeof confirm,
] = [
  sdkActivity,
  sdkSessions,
  sdkSignedOut,
  sdkLock,
  sdkLock,
  sdkUnlocked,
  sdkExport,
  sdkDeleted,
  sdkConfirm,
];

// @ts-expect-error an activity kind the service does not have
export const notAKind: typeof activity.events[number]["kind"] = "viewed";
// @ts-expect-error a session's client may be null
export const clientAlwaysSaid: string = sessions.sessions[0].client;
`;

Deno.test("a client generated by openapi-typescript type-checks against the client package's types", async () => {
  const schema = astToString(await openapiTS(committed() as never, { immutable: true }));
  const dir = await scratch({
    "schema.d.ts": schema,
    "agreement.ts": AGREEMENT(new URL("sdk/src/", ROOT).href),
  });
  try {
    const { success, output } = await denoCheck(`${dir}/agreement.ts`);
    assert.ok(success, output);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
