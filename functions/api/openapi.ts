/**
 * The OpenAPI 3.1 description of every route, generated: request bodies from the zod schemas the
 * routes validate with, answers from the schemas they type their answers by, errors from the code
 * → status table (errors.ts) and each code's details (api-schemas.ts). What is written here by hand
 * is which route answers which codes, prose and examples; the examples are typed by the schemas.
 * Served at GET /api/openapi.json; docs/openapi.json is the same document (`deno task openapi`).
 */
import { z } from "zod";
import {
  ANY_ROUTE,
  type Auth,
  ok,
  type Operation,
  type RequestBody,
  WITH_BODY,
} from "../_shared/http/api-operations.ts";
import {
  apiSchemas,
  carriesRetryAfter,
  ERROR_CODES,
  type ErrorAnswer,
  errorComponentName,
} from "../_shared/http/api-schemas.ts";
import { MAX_BODY_BYTES, MAX_PROOF_BODY_BYTES } from "../_shared/http/bodies.ts";
import { ERROR_STATUS, type ErrorCode } from "../_shared/http/errors.ts";
import { REVEAL_TOKEN_HEADER } from "../_shared/http/reveal-header.ts";
import { CORS_ALLOWED_HEADERS } from "../_shared/http/serve.ts";
import { CREATOR_USER_SECRETS_OPERATIONS } from "../user-secrets/creator-operations.ts";
import { USER_SECRETS_OPERATIONS } from "../user-secrets/operations.ts";
import { CREATOR_WALLET_PROOF_OPERATIONS } from "../wallet-proof/creator-operations.ts";
import { WALLET_PROOF_OPERATIONS } from "../wallet-proof/operations.ts";

/** Where the api function serves this document, below its own name. */
export const OPENAPI_PATH = "/openapi.json";

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
  ...CREATOR_USER_SECRETS_OPERATIONS,
];

/** Example error bodies, for the codes worth one. */
const ERROR_EXAMPLES: { readonly [C in ErrorCode]?: ErrorAnswer<C>["error"] } = {
  invalid_request: { code: "invalid_request", message: "unexpected field." },
  invalid_json: { code: "invalid_json", message: "The body is not valid UTF-8 JSON." },
  payload_too_large: {
    code: "payload_too_large",
    message: `The body must be at most ${MAX_BODY_BYTES} bytes.`,
    maxBytes: MAX_BODY_BYTES,
  },
  missing_token: { code: "missing_token", message: "Send Authorization: Bearer <token>." },
  session_revoked: {
    code: "session_revoked",
    message: "This session has ended; sign in again.",
  },
  nonce_used: { code: "nonce_used", message: "This nonce has already been used." },
  refresh_replayed: {
    code: "refresh_replayed",
    message: "This refresh was already made; only a retry with its retryKey gets the answer again.",
  },
  invalid_secret_type: {
    code: "invalid_secret_type",
    message: "The secret type must be one of: provider_a_api_key, provider_a_org_id, ….",
    allowedSecretTypes: ["provider_a_api_key", "provider_a_org_id", "provider_b_key"],
  },
  secret_not_found: {
    code: "secret_not_found",
    message: "No provider_b_key is stored for this creator.",
    secretType: "provider_b_key",
  },
  reveal_forbidden: {
    code: "reveal_forbidden",
    message: `Revealing secrets needs the server's ${REVEAL_TOKEN_HEADER} header.`,
  },
  rate_limited: {
    code: "rate_limited",
    message: "Too many requests; slow down.",
    retryAfterSeconds: 42,
  },
  database_unavailable: {
    code: "database_unavailable",
    message: "The database is unavailable; retry shortly.",
    retryAfterSeconds: 1,
  },
};

type Json = Record<string, unknown>;

const schemaRef = (id: string): Json => ({ $ref: `#/components/schemas/${id}` });

/** The component name a registered schema was given. */
function componentOf(schema: z.ZodType): Json {
  const id = apiSchemas.get(schema)?.id;
  if (id === undefined) throw new Error("a route's schema has no id in the API registry");
  return schemaRef(id);
}

const SECURITY: Readonly<Record<Auth, readonly Json[] | undefined>> = {
  "none": undefined,
  "optional session": [{}, { bearer: [] }],
  "session": [{ bearer: [] }],
  "session and reveal token": [{ bearer: [], revealToken: [] }],
};

/** The codes `operation` may answer, each once, in the table's order. */
function codesOf(operation: Operation): ErrorCode[] {
  const codes = new Set<ErrorCode>([
    ...ANY_ROUTE,
    ...(operation.body === undefined ? [] : WITH_BODY),
    ...operation.errors,
  ]);
  return ERROR_CODES.filter((code) => codes.has(code));
}

/** One response per status, each listing its codes, with Retry-After where they carry it. */
function errorResponses(codes: readonly ErrorCode[], withContent: boolean): Record<string, Json> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  }
  const responses: Record<string, Json> = {};
  for (const status of [...byStatus.keys()].sort((a, b) => a - b)) {
    const group = byStatus.get(status)!;
    const refs = group.map((code) => schemaRef(errorComponentName(code)));
    const waiting = group.filter(carriesRetryAfter);
    const examples = Object.fromEntries(
      group.flatMap((code) => {
        const error = ERROR_EXAMPLES[code];
        return error === undefined ? [] : [[code, { value: { error } }]];
      }),
    );
    responses[String(status)] = {
      description: group.map((code) => `\`${code}\``).join(", "),
      ...(waiting.length === 0 ? {} : {
        headers: {
          "Retry-After": waiting.length === group.length
            ? { $ref: "#/components/headers/RetryAfter" }
            : {
              description: `Sent with ${waiting.map((code) => `\`${code}\``).join(", ")}.`,
              required: false,
              schema: { type: "integer", minimum: 1 },
            },
        },
      }),
      ...(withContent
        ? {
          content: {
            "application/json": {
              schema: refs.length === 1 ? refs[0] : { oneOf: refs },
              ...(Object.keys(examples).length === 0 ? {} : { examples }),
            },
          },
        }
        : {}),
    };
  }
  return responses;
}

function responsesOf(operation: Operation, withContent = true): Record<string, Json> {
  const { answer } = operation;
  const success: Json = answer.status === 204 ? { description: answer.description } : {
    description: "OK",
    ...(withContent
      ? {
        content: {
          "application/json": {
            schema: componentOf(answer.schema),
            ...(answer.example === undefined ? {} : { example: answer.example }),
          },
        },
      }
      : {}),
  };
  return {
    [String(answer.status)]: success,
    ...errorResponses(codesOf(operation), withContent),
  };
}

function requestBodyOf(request: RequestBody): Json {
  return {
    required: !request.optional,
    description: `JSON, at most ${request.maxBytes} bytes` +
      (request.optional ? "; may be left out." : "."),
    content: {
      "application/json": { schema: componentOf(request.schema), example: request.example },
    },
  };
}

/** The query string's parameters, from its schema. */
function parametersOf(query: z.ZodObject): Json[] {
  const converted = z.toJSONSchema(query, { metadata: apiSchemas, io: "input", override }) as {
    properties?: Record<string, Json>;
    required?: string[];
  };
  return Object.entries(converted.properties ?? {}).map(([name, schema]) => {
    const { description, ...rest } = schema;
    return {
      name,
      in: "query",
      required: converted.required?.includes(name) ?? false,
      ...(description === undefined ? {} : { description }),
      schema: rest,
    };
  });
}

/**
 * The operation object: at its /api path, or (`viaFunction`) at the function's own URL, where
 * `apiPath` is the /api path it also answers at.
 */
function operationObject(operation: Operation, viaFunction: boolean, apiPath: string | null) {
  const security = SECURITY[operation.auth];
  return {
    operationId: viaFunction ? `${operation.operationId}ViaFunction` : operation.operationId,
    tags: [viaFunction ? "Function URLs" : operation.tag],
    summary: operation.summary,
    description: apiPath === null ? operation.description : `\`${operation.method.toUpperCase()} ` +
      `/api${apiPath}\` at the \`${operation.function}\` function's own URL. ${operation.description}`,
    ...(security === undefined ? {} : { security }),
    ...(operation.query === undefined ? {} : { parameters: parametersOf(operation.query) }),
    ...(operation.body === undefined ? {} : { requestBody: requestBodyOf(operation.body) }),
    responses: responsesOf(operation),
  };
}

/** HEAD, answered wherever GET is: the same statuses and headers, no body. */
function headObject(operation: Operation, viaFunction: boolean) {
  const security = SECURITY[operation.auth];
  return {
    operationId: `${operation.operationId}Head${viaFunction ? "ViaFunction" : ""}`,
    tags: [viaFunction ? "Function URLs" : operation.tag],
    summary: `${operation.summary} (headers only)`,
    description: "GET's answer without its body.",
    ...(security === undefined ? {} : { security }),
    ...(operation.query === undefined ? {} : { parameters: parametersOf(operation.query) }),
    responses: responsesOf(operation, false),
  };
}

/** A path's operations, HEAD beside GET. */
function pathItem(operations: readonly Operation[], viaFunction: boolean, apiPath: string | null) {
  const item: Json = {};
  for (const operation of operations) {
    item[operation.method] = operationObject(operation, viaFunction, apiPath);
    if (operation.method === "get") item.head = headObject(operation, viaFunction);
  }
  return item;
}

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
          description: "The server's reveal token (SERVER_REVEAL_TOKEN): live-run servers only.",
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

/** What zod's JSON Schema is given here beyond its own output. */
function override({ jsonSchema }: { jsonSchema: Record<string, unknown> }): void {
  // Readonly arrays are for the answers' TypeScript types; OpenAPI's readOnly means else.
  delete jsonSchema.readOnly;
  // The format says it; zod's equivalent pattern would only be noise.
  if (jsonSchema.format === "date-time" || jsonSchema.format === "uuid") delete jsonSchema.pattern;
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
