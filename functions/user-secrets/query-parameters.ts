/** A request's query string as an object for a route's schema; a name given twice is refused. */
import { ServiceError } from "../_shared/http/errors.ts";

export function queryParameters(request: Request): Record<string, string> {
  const parameters = new Map<string, string>();
  for (const [name, value] of new URL(request.url).searchParams) {
    // Not named: the name is the client's text (no error echoes it).
    if (parameters.has(name)) {
      throw new ServiceError("invalid_request", "The query string names a parameter twice.");
    }
    parameters.set(name, value);
  }
  // Own properties only (fromEntries defines them), so even "__proto__" is just a name.
  return Object.fromEntries(parameters);
}
