/**
 * The header that carries the server reveal token. Declared in the protocol because both sides
 * need it: the user-secrets function checks it, and the live-run client (sdk/src/server.ts) sends
 * it. Browsers cannot send it: CORS never allows it (CORS_ALLOWED_HEADERS in
 * functions/_shared/http/serve.ts).
 */
export const REVEAL_TOKEN_HEADER = "x-service-server-secret";

/**
 * What the reveal token may hold: printable ASCII without spaces, which a header carries as given
 * (clients strip a value's surrounding whitespace and refuse control characters). The service
 * checks SERVER_REVEAL_TOKEN against it, and the live-run client its revealToken.
 */
export const HEADER_SAFE_TOKEN = /^[\x21-\x7e]+$/;
