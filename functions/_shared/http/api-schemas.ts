/**
 * What the HTTP API's description is built from, beside the functions' own request and answer
 * schemas: the registry that names schemas (an `id` becomes an OpenAPI component) and describes
 * them, and the error body of every code in the code → status table (protocol/error-codes.ts),
 * with the details that code carries. errorResponse writes
 * `{ error: { code, message, ...details } }`; these say which details each code has.
 */
import { z } from "zod";
import { secretTypeSchema } from "../vault/secret-type-schema.ts";
import { ERROR_STATUS, type ErrorCode } from "../../../protocol/error-codes.ts";

/** What a schema may be given for the description: a component name, prose, examples. */
export interface ApiMeta {
  readonly id?: string;
  readonly title?: string;
  readonly description?: string;
  readonly examples?: readonly unknown[];
  readonly [extension: `x-${string}`]: unknown;
}

/** The schemas the OpenAPI description is generated from, and what it says of them. */
export const apiSchemas = z.registry<ApiMeta>();

/** `schema` with a description in the API's registry (the same schema, not a copy). */
export function described<T extends z.ZodType>(schema: T, description: string): T {
  apiSchemas.add(schema, { description });
  return schema;
}

/**
 * A request's schema named (and described) for the description, and some of its fields described:
 * `fields` maps a field's name to its description.
 */
export function describeRequest<S extends z.ZodObject>(
  schema: S,
  meta: ApiMeta,
  fields: { readonly [F in keyof S["shape"]]?: string } = {},
): void {
  apiSchemas.add(schema, meta);
  for (const [name, description] of Object.entries(fields)) {
    if (description !== undefined) apiSchemas.add(schema.shape[name], { description });
  }
}

apiSchemas.add(secretTypeSchema, {
  id: "SecretType",
  description: "A secret type, in the order every list uses.",
});

/** Every error code, in the table's order. */
export const ERROR_CODES = Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]];

export const errorCodeSchema = z.enum(ERROR_CODES).register(apiSchemas, {
  id: "ErrorCode",
  description: "Every error code; `x-status` maps each to the HTTP status it is always sent with.",
  "x-status": ERROR_STATUS,
});

const retryAfterSeconds = described(
  z.number().int().min(1),
  "Seconds to wait before trying again; the Retry-After header says the same.",
);
const secretTypes = described(z.array(secretTypeSchema), "The types that cannot be read.");

/**
 * The fields an error carries beside `code` and `message`, by code (ServiceError.details); a code
 * not named here carries none.
 */
const ERROR_DETAILS = {
  payload_too_large: {
    maxBytes: described(z.number().int().positive(), "The route's body limit in bytes."),
  },
  chain_not_allowed: {
    allowedChainIds: described(z.array(z.number().int().positive()), "The chains accepted."),
  },
  invalid_secret_type: {
    allowedSecretTypes: described(z.array(secretTypeSchema), "Every secret type."),
  },
  secret_not_found: { secretType: secretTypeSchema },
  encryption_key_unavailable: { secretTypes },
  decryption_failed: { secretTypes },
  rate_limited: { retryAfterSeconds },
  database_unavailable: { retryAfterSeconds },
  chain_unavailable: {
    chainId: described(z.number().int().positive(), "The chain that could not be asked."),
    retryAfterSeconds,
  },
} as const satisfies { readonly [C in ErrorCode]?: z.ZodRawShape };

type Details = typeof ERROR_DETAILS;
type DetailsOf<C extends ErrorCode> = C extends keyof Details ? z.infer<z.ZodObject<Details[C]>>
  : unknown;

/** The JSON body of an error with code `C`. */
export type ErrorAnswer<C extends ErrorCode = ErrorCode> = {
  [K in C]: { error: { code: K; message: string } & DetailsOf<K> };
}[C];

/** Whether an error with this code says how long to wait (and so sends Retry-After). */
export function carriesRetryAfter(code: ErrorCode): boolean {
  const details: z.ZodRawShape | undefined = (ERROR_DETAILS as Partial<
    Record<ErrorCode, z.ZodRawShape>
  >)[code];
  return details !== undefined && "retryAfterSeconds" in details;
}

/** `rate_limited` → `RateLimitedError`: the component name of a code's error body. */
export function errorComponentName(code: ErrorCode): string {
  return `${code.replace(/(^|_)([a-z])/g, (_, __, letter: string) => letter.toUpperCase())}Error`;
}

function errorAnswerSchema(code: ErrorCode): z.ZodType {
  const details = (ERROR_DETAILS as Partial<Record<ErrorCode, z.ZodRawShape>>)[code] ?? {};
  return z.strictObject({
    error: z.strictObject({
      // One of ErrorCode, this one: the enum is referenced (so the description uses it) and the
      // type stays the literal (ErrorCode & "code").
      code: z.intersection(errorCodeSchema, z.literal(code)),
      message: described(z.string(), "For people; the code is what a program reads."),
      ...details,
    }),
  }).register(apiSchemas, {
    id: errorComponentName(code),
    description: `The body of a ${ERROR_STATUS[code]} \`${code}\`.`,
  });
}

/** Each code's error body, registered as a component of its own. */
export const ERROR_ANSWERS = Object.fromEntries(
  ERROR_CODES.map((code) => [code, errorAnswerSchema(code)]),
) as { readonly [C in ErrorCode]: z.ZodType<ErrorAnswer<C>> };

/**
 * Any error's body: every operation's `default` answer, for the codes it does not list (a path not
 * described, another method, the local server's own, and codes a later v1 adds).
 */
export const anyErrorAnswerSchema = z.union(
  Object.values(ERROR_ANSWERS) as [z.ZodType, z.ZodType, ...z.ZodType[]],
).register(apiSchemas, {
  id: "ErrorAnswer",
  description: "The body of any error: `error.code` says which (ErrorCode lists every one).",
});
