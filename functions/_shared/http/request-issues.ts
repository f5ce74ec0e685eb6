/**
 * Validation failures as messages that name only the service's own field names and limits, never
 * what the caller sent. zod's own text for an unknown key repeats the key, and a key can be a
 * pasted secret (`{"sk-proj-…": 1}`); so every message here is built from the schema's side of the
 * issue (the path into the schema, the expected type, the limit), and an unknown field is
 * reported without its name.
 */
import type { z } from "zod";
import { ServiceError } from "./errors.ts";

export type Issue = z.core.$ZodIssue;

/**
 * The body as `schema` reads it, or the ServiceError `refuse` makes of the problems: by default
 * invalid_request naming the first one (describeIssue).
 */
export function parseRequest<T>(
  schema: z.ZodType<T>,
  body: unknown,
  refuse: (issues: readonly Issue[]) => ServiceError = firstIssue,
): T {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  throw refuse(parsed.error.issues);
}

function firstIssue(issues: readonly Issue[]): ServiceError {
  return new ServiceError("invalid_request", `${describeIssue(issues[0])}.`);
}

const TYPE_NAMES: Readonly<Record<string, string>> = {
  string: "a string",
  number: "a number",
  int: "an integer",
  boolean: "true or false",
  object: "an object",
  array: "an array",
};

/** `message: must be a string`, `unexpected field`, …: safe to send back, whatever the body held. */
export function describeIssue(issue: Issue): string {
  // Paths only ever lead through the schema's own keys (unknown keys are reported at their
  // parent, with path []) and array indices.
  const field = issue.path.map(String).join(".");
  const where = field === "" ? "" : `${field}: `;
  switch (issue.code) {
    case "unrecognized_keys":
      return field === "" ? "unexpected field" : `${field}: unexpected field`;
    case "invalid_type":
      return field === "" && issue.expected === "object"
        ? "the body must be a JSON object"
        : `${where}must be ${TYPE_NAMES[issue.expected] ?? "of another type"}`;
    case "too_big":
      return issue.inclusive === false
        ? `${where}must be less than ${issue.maximum}${unit(issue.origin)}`
        : `${where}must be at most ${issue.maximum}${unit(issue.origin)}`;
    case "too_small":
      if (issue.inclusive === false) {
        return `${where}must be greater than ${issue.minimum}${unit(issue.origin)}`;
      }
      return issue.origin === "string" && Number(issue.minimum) === 1
        ? `${where}must not be empty`
        : `${where}must be at least ${issue.minimum}${unit(issue.origin)}`;
    case "invalid_value":
      // The values are the schema's own list (an enum or literal), never the caller's.
      return `${where}must be one of: ${issue.values.map(String).join(", ")}`;
    case "invalid_format":
    case "custom":
      // Written by the schema (a regex's message, a refinement's error), never from the input.
      return `${where}${issue.message}`;
    default:
      return `${where}is not valid`;
  }
}

function unit(origin: string): string {
  return origin === "string" ? " characters" : origin === "array" ? " entries" : "";
}
