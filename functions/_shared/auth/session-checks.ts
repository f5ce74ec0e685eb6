/**
 * What a route's caller must prove, declared once per route in its function's route table
 * (handler.ts), as `r.With(requireAuthentication)` is in GoTrue's: the check wraps the route, and
 * the route receives the identity it proved instead of checking it itself.
 */
import { ServiceError } from "../http/errors.ts";
import type { Handler } from "../http/router.ts";
import type { SessionTokens, TokenIdentity } from "./session-tokens.ts";

/** A route behind a session check: the request, and the identity its token proved. */
export type SessionRoute = (request: Request, session: TokenIdentity) => Promise<Response>;

/** A route that answers with or without a session: null when the request sent none. */
export type OptionalSessionRoute = (
  request: Request,
  session: TokenIdentity | null,
) => Promise<Response>;

export interface SessionChecks {
  /** A valid token whose session the database confirms is still live: a query of its own. */
  requireLiveSession(route: SessionRoute): Handler;
  /**
   * A valid token (signature, algorithm, expiry, audience, claims), without asking whether its
   * session has ended: only for a route whose own database call checks that in its statement.
   */
  requireValidToken(route: SessionRoute): Handler;
  /** requireValidToken where no token is an anonymous caller (null); a bad token is still a 401. */
  acceptValidToken(route: OptionalSessionRoute): Handler;
  /** The identity a valid token names, or null for none or one that fails: for recording refusals. */
  identityIfValid(request: Request): Promise<TokenIdentity | null>;
}

/** The checks of one function's routes, against `publicApiKeys` (sessionBearer says why). */
export function sessionChecks(
  sessions: SessionTokens,
  publicApiKeys: readonly string[],
): SessionChecks {
  const required = (request: Request) => requireSessionToken(request, publicApiKeys);
  return {
    requireLiveSession: (route) => async (request) =>
      route(request, await sessions.checkLiveSession(required(request))),
    requireValidToken: (route) => async (request) =>
      route(request, await sessions.checkToken(required(request))),
    acceptValidToken: (route) => async (request) => {
      const token = sessionBearer(request, publicApiKeys);
      return route(request, token === null ? null : await sessions.checkToken(token));
    },
    async identityIfValid(request) {
      try {
        return await sessions.checkToken(required(request));
      } catch (error) {
        if (error instanceof ServiceError) return null;
        throw error;
      }
    },
  };
}

function bearerToken(request: Request): string | null {
  const header = request.headers.get("authorization");
  if (header === null) return null;
  const match = /^Bearer[ ]+([^\s]+)[ ]*$/i.exec(header);
  if (!match) {
    throw new ServiceError("invalid_token", "Send the session as Authorization: Bearer <token>.");
  }
  return match[1];
}

/**
 * The caller's session token, or null when it has none. supabase-js sends the project's public API
 * key as the bearer when the app has no session of its own: that is a client without a session, not
 * a forged one. Only an exact match counts (a bearer that merely looks like a key is a token that
 * fails verification); the keys ship in every frontend, so comparing them leaks nothing.
 */
function sessionBearer(request: Request, publicApiKeys: readonly string[]): string | null {
  const token = bearerToken(request);
  return token !== null && publicApiKeys.includes(token) ? null : token;
}

/** sessionBearer for a route that needs a session: none is refused with missing_token. */
function requireSessionToken(request: Request, publicApiKeys: readonly string[]): string {
  const token = sessionBearer(request, publicApiKeys);
  if (token === null) {
    throw new ServiceError("missing_token", "Send Authorization: Bearer <token>.");
  }
  return token;
}
