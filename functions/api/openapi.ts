/**
 * The OpenAPI 3.1 description of every route, generated: request bodies from the zod schemas the
 * routes validate with, answers from the schemas they type their answers by, errors from the code
 * → status table (errors.ts) and each code's details (api-schemas.ts). What is written here by hand
 * is which route answers which codes, prose and examples; the examples are typed by the schemas.
 * Served at GET /api/openapi.json; docs/openapi.json is the same document (`deno task openapi`).
 */
import { z } from "zod";
import { ok, type Operation } from "../_shared/http/api-operations.ts";
import { apiSchemas, errorComponentName } from "../_shared/http/api-schemas.ts";
import { MAX_BODY_BYTES, MAX_PROOF_BODY_BYTES } from "../_shared/http/bodies.ts";
import { REVEAL_TOKEN_HEADER } from "../_shared/http/reveal-header.ts";
import { CORS_ALLOWED_HEADERS } from "../_shared/http/serve.ts";
import { CREATOR_USER_SECRETS_OPERATIONS } from "../user-secrets/creator-operations.ts";
import { USER_SECRETS_OPERATIONS } from "../user-secrets/operations.ts";
import { CREATOR_WALLET_PROOF_OPERATIONS } from "../wallet-proof/creator-operations.ts";
import { WALLET_PROOF_OPERATIONS } from "../wallet-proof/operations.ts";
import { WELL_KNOWN_OPERATIONS } from "../wallet-proof/well-known.ts";
import { type Json, override, pathItem, schemaRef } from "./openapi-operations.ts";

/**
 * Where the api function serves this document, below its own name. Exported apart from its
 * value: the Supabase CLI's deploy takes a quoted path after `export` for a file to upload.
 */
const OPENAPI_PATH = "/openapi.json";
export { OPENAPI_PATH };

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

const LOCAL_ORIGIN = "http://127.0.0.1:54321";
const DEPLOYED_ORIGIN = "https://{projectRef}.supabase.co";
/** The variable takes no description: the OpenAPI 3.1 schema validators check has a typo there. */
const PROJECT_REF = { projectRef: { default: "your-project-ref" } };

/** /api paths are the api function's: deployed, it sits at /functions/v1/api. */
const API_SERVERS = [
  { url: LOCAL_ORIGIN, description: "The local server (`deno task start`; PORT=… for another)." },
  {
    url: `${DEPLOYED_ORIGIN}/functions/v1`,
    description: "Deployed on Supabase (projectRef: the project's reference): the api function.",
    variables: PROJECT_REF,
  },
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
  \`404 not_found\` (\`components.responses.NotFound\`); a described path with another method is
  \`405 method_not_allowed\` with \`Allow\` (\`components.responses.MethodNotAllowed\`). HEAD is
  answered wherever GET is; OPTIONS is a CORS preflight on any path
  (\`components.responses.Preflight\`). The local server answers \`408 request_timeout\` to a body
  that does not arrive in time and \`421 misdirected_request\` on its internal port.
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
    servers: [
      {
        url: LOCAL_ORIGIN,
        description: "The local server (`deno task start`; PORT=… for another).",
      },
      {
        url: DEPLOYED_ORIGIN,
        description: "Deployed on Supabase (projectRef: the project's reference).",
        variables: PROJECT_REF,
      },
    ],
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
      responses: {
        NotFound: {
          description: "Any other path below /api or /functions/v1/<function>: no such route.",
          content: { "application/json": { schema: schemaRef(errorComponentName("not_found")) } },
        },
        MethodNotAllowed: {
          description: "A described path with a method it does not take.",
          headers: {
            Allow: {
              description: "The methods the path takes (HEAD wherever GET).",
              required: true,
              schema: { type: "string" },
            },
          },
          content: {
            "application/json": { schema: schemaRef(errorComponentName("method_not_allowed")) },
          },
        },
        Preflight: {
          description: "OPTIONS on any path: the CORS preflight, with no body.",
          headers: {
            "Access-Control-Allow-Methods": { schema: { type: "string" } },
            "Access-Control-Allow-Headers": {
              schema: { type: "string", const: CORS_ALLOWED_HEADERS },
            },
            "Access-Control-Max-Age": { schema: { type: "string" } },
          },
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
