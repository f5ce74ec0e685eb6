/**
 * The functions' error value: a stable `code` from the protocol's table (protocol/error-codes.ts),
 * which alone maps it to an HTTP status. Handlers throw `ServiceError`s; the HTTP layer answers
 * them.
 */
import { ERROR_STATUS, type ErrorCode } from "../../../protocol/error-codes.ts";

export class ServiceError extends Error {
  readonly code: ErrorCode;
  /** Extra, non-secret fields for the client (e.g. the allowed values). */
  readonly details?: Readonly<Record<string, unknown>> | undefined;
  readonly headers?: Readonly<Record<string, string>> | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    details?: Readonly<Record<string, unknown>>,
    headers?: Readonly<Record<string, string>>,
  ) {
    super(message);
    this.code = code;
    this.details = details;
    this.headers = headers;
    this.name = "ServiceError";
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }
}
