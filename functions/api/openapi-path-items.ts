/**
 * One route's operations as an OpenAPI path item (openapi.ts assembles the document): parameters
 * and body from the schemas the route validates with, answers from the schemas it types its
 * answers by, each error code it can answer under its status, and its security.
 */
import { z } from "zod";
import {
  ANY_ROUTE,
  type Auth,
  type Operation,
  type RequestBody,
  WITH_BODY,
} from "../_shared/http/openapi-operation.ts";
import {
  apiSchemas,
  carriesRetryAfter,
  ERROR_CODES,
  type ErrorAnswer,
  errorComponentName,
} from "../_shared/http/api-schemas.ts";
import { MAX_BODY_BYTES } from "../_shared/http/bodies.ts";
import { ERROR_STATUS, type ErrorCode } from "../../protocol/error-codes.ts";
import { REVEAL_TOKEN_HEADER } from "../../protocol/reveal-header.ts";

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

export type Json = Record<string, unknown>;

export const schemaRef = (id: string): Json => ({ $ref: `#/components/schemas/${id}` });

/** The component name a registered schema was given. */
function componentOf(schema: z.ZodType): Json {
  const id = apiSchemas.get(schema)?.id;
  if (id === undefined) throw new Error("a route's schema has no id in the API registry");
  return schemaRef(id);
}

/** Public operations say so (`[]`): no security at the root means none was stated, not none needed. */
const SECURITY: Readonly<Record<Auth, readonly Json[]>> = {
  "none": [],
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
              // anyOf: the bodies differ in error.code alone, a level below where OpenAPI's
              // discriminator and Redocly's oneOf check (no-illogical-composition-keywords) look.
              schema: refs.length === 1 ? refs[0] : { anyOf: refs },
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
    default: {
      description: "Another error: 421 `misdirected_request` on the local server's internal " +
        "port, or a code a later v1 adds (read it by its status).",
      ...(withContent
        ? { content: { "application/json": { schema: schemaRef("ErrorAnswer") } } }
        : {}),
    },
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
    security,
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
    security,
    ...(operation.query === undefined ? {} : { parameters: parametersOf(operation.query) }),
    responses: responsesOf(operation, false),
  };
}

/** A path's operations, HEAD beside GET. */
export function pathItem(
  operations: readonly Operation[],
  viaFunction: boolean,
  apiPath: string | null,
) {
  const item: Json = {};
  for (const operation of operations) {
    item[operation.method] = operationObject(operation, viaFunction, apiPath);
    if (operation.method === "get") item.head = headObject(operation, viaFunction);
  }
  return item;
}

/** What zod's JSON Schema is given here beyond its own output. */
export function override({ jsonSchema }: { jsonSchema: Record<string, unknown> }): void {
  // Readonly arrays are for the answers' TypeScript types; OpenAPI's readOnly means else.
  delete jsonSchema.readOnly;
  // The format says it; zod's equivalent pattern would only be noise.
  if (jsonSchema.format === "date-time" || jsonSchema.format === "uuid") delete jsonSchema.pattern;
}
