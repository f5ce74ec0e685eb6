/**
 * The user-secrets request bodies, validated with zod, and the one place that decides which error
 * code a bad body earns. No message ever quotes what the caller sent: a creator who swaps the two
 * fields by mistake must not see the key echoed back.
 */
import { z } from "zod";
import { ServiceError } from "../_shared/http/errors.ts";
import { type Issue, parseRequest } from "../_shared/http/request-issues.ts";
import { SECRET_TYPES, type SecretType } from "../../protocol/secret-types.ts";
import { secretTypeSchema } from "../_shared/vault/secret-type-schema.ts";

export const MAX_VALUE_CHARACTERS = 4096;
/** Values at least this long get a hint: "…" and their last four characters. */
export const HINT_MIN_CHARACTERS = 16;

// C0 and C1 control characters (DEL included) and Unicode's line and paragraph separators:
// provider keys never contain line breaks or tabs.
const CONTROL_CHARACTER = /[\p{Cc}\p{Zl}\p{Zp}]/u;
// Every secret type is a provider's API key or organisation ID, which are printable ASCII, and a
// live run sends them in HTTP headers, which carry nothing else. An allow-list, because a list of
// invisible characters is never complete (fillers, blanks, variation selectors, look-alikes).
const PRINTABLE_ASCII = /^[\x21-\x7e]*$/;

const characters = (value: string) => Array.from(value).length;

const secretType = secretTypeSchema;

const secretValue = z.string({ error: "value must be a string." })
  .refine((v) => v.trim().length > 0, { error: "value must not be empty or blank.", abort: true })
  .refine((v) => characters(v) <= MAX_VALUE_CHARACTERS, {
    error: `value must be at most ${MAX_VALUE_CHARACTERS} characters.`,
    abort: true,
  })
  .refine((v) => !CONTROL_CHARACTER.test(v), {
    error: "value must not contain control characters such as line breaks or tabs.",
    abort: true,
  })
  .refine((v) => PRINTABLE_ASCII.test(v), {
    error: "value must be printable ASCII, as provider keys and organisation IDs are: no spaces, " +
      "accented or non-Latin letters, or invisible characters such as zero-width spaces.",
  });

export const putBody = z.strictObject({ secretType, value: secretValue });
export const deleteBody = z.strictObject({ secretType });
export const revealBody = z.strictObject({ secretTypes: z.array(secretType).optional() });

export interface PutRequest {
  readonly secretType: SecretType;
  readonly value: string;
}

export function parsePutRequest(body: unknown): PutRequest {
  return parse(putBody, body, "Send { secretType, value } as JSON.");
}

export function parseDeleteRequest(body: unknown): { readonly secretType: SecretType } {
  return parse(deleteBody, body, "Send { secretType } as JSON.");
}

/** The types to reveal, each once, in SECRET_TYPES order; every type when none are named. */
export function parseRevealRequest(body: unknown): SecretType[] {
  const { secretTypes } = parse(
    revealBody,
    body,
    'Send { "secretTypes"?: [...] } as JSON, or no body for every type.',
  );
  if (secretTypes === undefined) return [...SECRET_TYPES];
  return SECRET_TYPES.filter((type) => secretTypes.includes(type));
}

/** "…" and the last four characters, for values long enough that this gives nothing away. */
export function hintFor(value: string): string | null {
  const chars = Array.from(value);
  return chars.length >= HINT_MIN_CHARACTERS ? `…${chars.slice(-4).join("")}` : null;
}

/**
 * Maps the first problem to a code: the body's shape (not an object, unknown fields) is
 * invalid_request, a type invalid_secret_type with the allowed list, the value invalid_value.
 */
function parse<T>(schema: z.ZodType<T>, body: unknown, shape: string): T {
  return parseRequest(schema, body, (issues) => refusal(issues, body, shape));
}

function refusal(issues: readonly Issue[], body: unknown, shape: string): ServiceError {
  if (body === undefined || issues.some((issue) => issue.path.length === 0)) {
    return new ServiceError(
      "invalid_request",
      body === undefined || body === null || typeof body !== "object" || Array.isArray(body)
        ? shape
        : `${shape} No other fields are accepted.`,
    );
  }
  // secretTypes that is not an array is a shape problem; a bad entry in it is a bad type.
  if (issues.some((issue) => issue.path[0] === "secretTypes" && issue.path.length === 1)) {
    return new ServiceError("invalid_request", shape);
  }
  if (issues.some((issue) => issue.path[0] === "secretType" || issue.path[0] === "secretTypes")) {
    return new ServiceError(
      "invalid_secret_type",
      `The secret type must be one of: ${SECRET_TYPES.join(", ")}.`,
      { allowedSecretTypes: SECRET_TYPES },
    );
  }
  const valueIssue = issues.find((issue) => issue.path[0] === "value");
  if (valueIssue !== undefined) return new ServiceError("invalid_value", valueIssue.message);
  return new ServiceError("invalid_request", shape);
}
