/**
 * The OpenAPI 3.1 description of every route, generated: request bodies from the zod schemas the
 * routes validate with, answers from the schemas they type their answers by, errors from the code
 * → status table (protocol/error-codes.ts) and each code's details (api-schemas.ts). What is
 * written here by hand is which route answers which codes, prose and examples; the examples are
 * typed by the schemas.
 * Served at GET /api/openapi.json; docs/openapi.json is the same document (`deno task openapi`).
 */
import { z } from "zod";
import { ok, type Operation } from "../_shared/http/openapi-operation.ts";
import { apiSchemas } from "../_shared/http/api-schemas.ts";
import { MAX_BODY_BYTES, MAX_PROOF_BODY_BYTES } from "../_shared/http/bodies.ts";
import { REVEAL_TOKEN_HEADER } from "../../protocol/reveal-header.ts";
import { CORS_ALLOWED_HEADERS } from "../_shared/http/serve.ts";
import { CREATOR_USER_SECRETS_OPERATIONS } from "../user-secrets/openapi-creator-controls.ts";
import { USER_SECRETS_OPERATIONS } from "../user-secrets/openapi-vault.ts";
import { CREATOR_WALLET_PROOF_OPERATIONS } from "../wallet-proof/openapi-creator-controls.ts";
import { WALLET_PROOF_OPERATIONS } from "../wallet-proof/openapi-sign-in.ts";
import { WELL_KNOWN_OPERATIONS } from "../wallet-proof/well-known.ts";
import { type Json, override, pathItem } from "./openapi-path-items.ts";
import { OPENAPI_PATH } from "./openapi-path.ts";

/** What GET /api/openapi.json answers: an OpenAPI 3.1 document (this module's). */
export const openApiDocumentSchema = z.looseObject({
  openapi: z.string().regex(/^3\.1\.\d+$/),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.unknown()),
}).register(apiSchemas, {
  id: "OpenApiDocument",
  description: "This document: an OpenAPI 3.1 description of every route.",
});
export type OpenApiDocument = z.infer<typeof openApiDocumentSchema>;

/** Every route's operation, by function. */
const OPERATIONS: readonly Operation[] = [
  ...WALLET_PROOF_OPERATIONS,
  ...USER_SECRETS_OPERATIONS,
  ...CREATOR_WALLET_PROOF_OPERATIONS,
  ...WELL_KNOWN_OPERATIONS("wallet-proof"),
  ...CREATOR_USER_SECRETS_OPERATIONS,
];

/** GET /api/openapi.json, the api function's own route. */
const DESCRIPTION_OPERATION: Operation = {
  function: "api",
  path: OPENAPI_PATH,
  method: "get",
  operationId: "getOpenApiDescription",
  tag: "Description",
  summary: "This document",
  description: "The OpenAPI 3.1 description of every route; any origin may read it.",
  auth: "none",
  answer: ok(openApiDocumentSchema),
  errors: [],
};

/**
 * Relative, so right for whoever serves the document (RFC 3986 resolution against its URL, as
 * OpenAPI 3.1 says): it is at <root>/api/openapi.json, where <root> is the origin locally and
 * <origin>/functions/v1 deployed (and locally at /functions/v1/api/openapi.json too). `..` from
 * there is <root>/, below which the /api paths are; the /functions/v1 paths are below the origin,
 * which `../../..` reaches from either (resolution stops at the origin's root).
 */
const API_SERVERS = [
  { url: "..", description: "Where this document is served from: /api is beside /openapi.json." },
];
const FUNCTION_SERVERS = [
  { url: "../../..", description: "The origin serving this document (the project's URL)." },
];

const INFO_DESCRIPTION = `\
Wallet sign-in (EIP-4361 messages, EIP-191 signatures) and an encrypted vault of AI-provider API
keys, as Supabase Edge Functions. Every route answers through the \`/api\` proxy (the \`api\`
function) and at its own function's URL (\`/functions/v1/wallet-proof/…\`,
\`/functions/v1/user-secrets/…\`); both answer the same.

- **Bodies** are JSON (\`Content-Type: application/json\`), at most ${MAX_BODY_BYTES} bytes
  (${MAX_PROOF_BODY_BYTES} for the sign-in proof); a key named twice in one object is refused.
- **Every answer** carries \`Cache-Control: no-store\`.
- **Errors** are \`{ "error": { "code", "message", … } }\`: \`code\` is stable (\`ErrorCode\` lists
  every one, \`x-status\` its status), the status always the code's, and some codes carry details
  (each code's schema says which). Every 429 and 503 sends \`Retry-After\`, also in the body as
  \`retryAfterSeconds\`. No error repeats what the request sent.
- **Any path** below \`/api\` or \`/functions/v1/<function>\` that is not described here is
  \`404 not_found\` (\`NotFoundError\`); a described path with another method is
  \`405 method_not_allowed\` with an \`Allow\` header naming the methods it takes
  (\`MethodNotAllowedError\`). HEAD is answered wherever GET is; OPTIONS is a CORS preflight on any
  path: 204, no body, \`Access-Control-Allow-Methods\`, \`Access-Control-Allow-Headers\` and
  \`Access-Control-Max-Age\`. The local server answers \`408 request_timeout\` to a body that does
  not arrive in time and \`421 misdirected_request\` on its internal port.
- **CORS** allows the headers \`${CORS_ALLOWED_HEADERS}\` from the allowed origins, never
  \`${REVEAL_TOKEN_HEADER}\`, and exposes \`Retry-After\`.`;

/** The OpenAPI document for the /api paths in `apiRoutes` (/api path → [function, its path]). */
export function openApiDocument(
  apiRoutes: Readonly<Record<string, readonly [string, string]>>,
): OpenApiDocument {
  const byRoute = new Map<string, Operation[]>();
  for (const operation of OPERATIONS) {
    const route = `${operation.function}${operation.path}`;
    byRoute.set(route, [...(byRoute.get(route) ?? []), operation]);
  }
  const paths: Record<string, Json> = {};
  const apiPathOf = new Map<string, string>();
  for (const [apiPath, [functionName, functionPath]] of Object.entries(apiRoutes)) {
    const operations = byRoute.get(`${functionName}${functionPath}`);
    // Left out rather than thrown: the document still serves, and a test names what is missing.
    if (operations === undefined) continue;
    apiPathOf.set(`${functionName}${functionPath}`, apiPath);
    paths[`/api${apiPath}`] = { servers: API_SERVERS, ...pathItem(operations, false, null) };
  }
  paths[`/api${OPENAPI_PATH}`] = {
    servers: API_SERVERS,
    ...pathItem([DESCRIPTION_OPERATION], false, null),
  };
  for (const [route, operations] of byRoute) {
    paths[`/functions/v1/${route}`] = pathItem(operations, true, apiPathOf.get(route) ?? null);
  }

  return {
    openapi: "3.1.0",
    info: {
      title: "Wallet vault",
      version: "1.0.0",
      summary: "Wallet sign-in and an encrypted vault of AI-provider API keys.",
      description: INFO_DESCRIPTION,
      license: { name: "MIT", identifier: "MIT" },
    },
    // The /functions/v1 paths'; each /api path names its own.
    servers: FUNCTION_SERVERS,
    tags: [
      { name: "Sign-in", description: "Nonce, proof → session, refresh, logout (wallet-proof)." },
      { name: "Secrets", description: "Masked list, save, delete, reveal (user-secrets)." },
      {
        name: "Creator controls",
        description: "Sessions, activity, the live-run lock, export and leaving (both functions).",
      },
      { name: "Function URLs", description: "The same operations at each function's own URL." },
      { name: "Description", description: "This document." },
    ],
    paths,
    components: {
      schemas: componentSchemas(),
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "JWT",
          description: "The session's `access_token` (POST /api/auth/wallet-proof or refresh). " +
            "The project's public API key as the bearer (as supabase-js sends without a " +
            "session) counts as no session.",
        },
        revealToken: {
          type: "apiKey",
          in: "header",
          name: REVEAL_TOKEN_HEADER,
          description: "The live-run service's credential (`wvlr_…`, from `deno task " +
            "credentials:add`): live-run servers only.",
        },
      },
      headers: {
        RetryAfter: {
          description: "Seconds to wait before trying again.",
          required: true,
          schema: { type: "integer", minimum: 1 },
        },
      },
    },
  };
}

/** Every registered schema as a component: JSON Schema 2020-12, OpenAPI 3.1's dialect. */
function componentSchemas(): Record<string, unknown> {
  const { schemas } = z.toJSONSchema(apiSchemas, {
    metadata: apiSchemas,
    io: "input",
    uri: (id) => `#/components/schemas/${id}`,
    override,
  });
  const components: Record<string, unknown> = {};
  for (const id of Object.keys(schemas).sort()) {
    const { $schema: _dialect, $id: _id, ...schema } = schemas[id];
    components[id] = schema;
  }
  return components;
}
