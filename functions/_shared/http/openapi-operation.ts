/**
 * How a function describes its routes for the OpenAPI description (functions/api/openapi.ts): one
 * Operation per route, next to the function's routes (its openapi-*.ts). The schemas are the ones
 * the route validates with and types its answer by; the examples are typed by them; `errors` says
 * which codes the route answers besides those every route (or every route with a body) may.
 */
import type { z } from "zod";
import { MAX_BODY_BYTES } from "./bodies.ts";
import type { ErrorCode } from "../../../protocol/error-codes.ts";

export type Method = "get" | "post" | "put" | "delete";

/** What the route needs: the bearer is the session's access token; the reveal token a header. */
export type Auth = "none" | "optional session" | "session" | "session and reveal token";

export interface Operation {
  /** The function's name: its folder under functions/. */
  readonly function: string;
  /** Below the function's name: "" or "/nonce". */
  readonly path: string;
  readonly method: Method;
  readonly operationId: string;
  /** The group it is listed under ("Sign-in", "Secrets", …). */
  readonly tag: string;
  readonly summary: string;
  readonly description: string;
  readonly auth: Auth;
  /** The query string's schema (its values are strings), when the route reads one. */
  readonly query?: z.ZodObject;
  readonly body?: RequestBody;
  readonly answer: Answer;
  readonly errors: readonly ErrorCode[];
}

export interface RequestBody {
  readonly schema: z.ZodType;
  /** The route reads a missing body as `{}`. */
  readonly optional: boolean;
  readonly maxBytes: number;
  readonly example: unknown;
}

export type Answer =
  | { readonly status: 200; readonly schema: z.ZodType; readonly example?: unknown }
  | { readonly status: 204; readonly description: string };

/** A JSON request body, with an example its schema's type checks. */
export function body<S extends z.ZodType>(
  schema: S,
  example: z.input<S>,
  options: { readonly optional?: boolean; readonly maxBytes?: number } = {},
): RequestBody {
  return {
    schema,
    example,
    optional: options.optional ?? false,
    maxBytes: options.maxBytes ?? MAX_BODY_BYTES,
  };
}

/** A 200 JSON answer, with an example its schema's type checks. */
export function ok<S extends z.ZodType>(schema: S, example?: z.output<S>): Answer {
  return example === undefined ? { status: 200, schema } : { status: 200, schema, example };
}

/** A 204 answer. */
export function noContent(description: string): Answer {
  return { status: 204, description };
}

/** Every route may answer these: a Host that makes no URL, a failure, a function not configured. */
export const ANY_ROUTE: readonly ErrorCode[] = [
  "invalid_request",
  "internal_error",
  "not_configured",
];

/** Every route that reads a body may answer these (408 on the local server only). */
export const WITH_BODY: readonly ErrorCode[] = [
  "invalid_json",
  "invalid_request",
  "payload_too_large",
  "unsupported_media_type",
  "request_timeout",
];

/** A route that needs a session answers these when it has none that is live. */
export const SESSION: readonly ErrorCode[] = [
  "missing_token",
  "invalid_token",
  "token_expired",
  "session_revoked",
];
