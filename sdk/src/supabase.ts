/**
 * The service's error from a supabase-js `functions.invoke` failure, so a caller branches on
 * `code` as with the vault's own clients instead of reading `error.context` (a Response, or the
 * error fetch threw). It imports nothing from supabase-js: its errors are told apart by `name`.
 */
import { serviceError, VaultError } from "./errors.ts";

/** The fields of supabase-js's FunctionsError this reads. */
interface FunctionsErrorLike {
  readonly name?: unknown;
  readonly message?: unknown;
  readonly context?: unknown;
}

/**
 * `{ error }` of `functions.invoke` as a VaultError; null when there is no error.
 *
 * - FunctionsHttpError (a non-2xx answer): the service's code, message, status and details, read
 *   from the answer's JSON body (which must not have been read yet); `invalid_response` when the
 *   body is not the service's.
 * - FunctionsFetchError: the VaultError it carries (the `accessToken` function's, e.g. a refresh
 *   the service refused), else `network_error`.
 * - FunctionsRelayError (Supabase's relay could not reach the function): `network_error`.
 */
export async function vaultErrorFrom(error: unknown): Promise<VaultError | null> {
  if (error === null || error === undefined) return null;
  if (error instanceof VaultError) return error;
  const { name, context } = error as FunctionsErrorLike;
  if (name === "FunctionsFetchError") {
    if (context instanceof VaultError) return context;
    return new VaultError("network_error", "The function could not be reached.", {
      cause: context,
    });
  }
  if (name === "FunctionsRelayError") {
    return new VaultError("network_error", "Supabase's relay could not reach the function.", {
      status: context instanceof Response ? context.status : null,
      cause: error,
    });
  }
  if (name === "FunctionsHttpError" && context instanceof Response) {
    let body: unknown;
    try {
      body = await context.json();
    } catch {
      // Read already, or not JSON: no code to report. Its text is not quoted (it may be anything).
      body = undefined;
    }
    return serviceError(context.status, body, context.headers) ??
      new VaultError(
        "invalid_response",
        `The function answered ${context.status} without the service's JSON body.`,
        { status: context.status },
      );
  }
  return new VaultError("invalid_response", "Not an error of functions.invoke.", { cause: error });
}
