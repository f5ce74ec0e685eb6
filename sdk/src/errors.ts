/**
 * The one error type of both clients (browser and live-run server): a VaultError whose `code` is
 * the service's stable error code or one of the clients' own, so callers branch on `code` alone.
 *
 * Served to browsers as is (erasable TypeScript only: no enums, namespaces or parameter
 * properties), and it imports types only, so it pulls no server code into the page.
 */
import type { ErrorCode } from "../../protocol/error-codes.ts";
import type { RouteErrorCode } from "../../protocol/provider-routing.ts";

/** Failures that happen in a client, before or instead of a service answer. */
export type ClientErrorCode =
  /** The service could not be reached (offline, refused, reset, DNS, CORS refusal). */
  | "network_error"
  /** The service answered something that is not its JSON. */
  | "invalid_response"
  // Browser client
  /** The wallet refused (EIP-1193 4001): the creator declined to connect or to sign. */
  | "signature_rejected"
  /** The wallet failed otherwise (locked, no account, unsupported method…). */
  | "wallet_error"
  /** The server's sign-in message does not match its own nonce answer or the account. */
  | "message_mismatch"
  /** An operation that needs a session was called without one. */
  | "not_signed_in"
  /**
   * A call's session was replaced while it waited for a refresh (another creator signed in, or
   * the creator signed out, maybe in another tab): it was not sent again for anyone.
   */
  | "session_changed"
  // Both clients
  /** No complete answer within timeoutMs (the service may just be slow): only a refresh retries. */
  | "timeout"
  /** A 3xx answer: never followed, since it would carry the body and the keys elsewhere. */
  | "redirect_refused"
  // Live-run server client
  /** RevealedSecrets.get() of a type the reveal did not return. */
  | "secret_not_revealed"
  /** From planRoute: no stored key enables the step, or an unknown step kind/provider. */
  | RouteErrorCode;

export type VaultErrorCode = ErrorCode | ClientErrorCode;

export interface VaultErrorOptions {
  /** HTTP status when the service answered, else null (network, timeout, routing). */
  readonly status?: number | null;
  readonly details?: Record<string, unknown>;
  readonly cause?: unknown;
}

export class VaultError extends Error {
  /** The service's stable error code (`token_expired`, `reveal_forbidden`, …) or a client's own. */
  readonly code: VaultErrorCode;
  /** HTTP status when the service answered, else null. */
  readonly status: number | null;
  /** Extra non-secret fields: the service's (e.g. allowedChainIds) or the route options. */
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: VaultErrorCode, message: string, options: VaultErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "VaultError";
    this.code = code;
    this.status = options.status ?? null;
    this.details = options.details ?? {};
  }
}

/** The user declined in the wallet: a normal outcome to show, not a crash. */
export class SignatureRejectedError extends VaultError {
  /** Whether the creator declined connecting the wallet or signing the message. */
  readonly step: "connect" | "sign";

  constructor(step: "connect" | "sign", cause?: unknown) {
    super(
      "signature_rejected",
      step === "sign"
        ? "You declined to sign the sign-in message in your wallet."
        : "You declined to connect your wallet.",
      { cause },
    );
    this.name = "SignatureRejectedError";
    this.step = step;
  }
}

/**
 * The service's error answer, `{ "error": { "code", "message", ...details } }`, as a VaultError;
 * null when the body is not one. The message is the service's, which never quotes a value. A
 * Retry-After header the body does not restate is kept as `details.retryAfterSeconds`.
 */
export function serviceError(status: number, body: unknown, headers?: Headers): VaultError | null {
  const error = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  if (typeof error?.code !== "string") return null;
  const { code, message, ...details } = error as Record<string, unknown>;
  const retryAfter = Number(headers?.get("retry-after") ?? NaN);
  if (details.retryAfterSeconds === undefined && Number.isSafeInteger(retryAfter)) {
    details.retryAfterSeconds = retryAfter;
  }
  return new VaultError(
    code as VaultErrorCode,
    typeof message === "string" ? message : code as string,
    { status, details },
  );
}
