/**
 * The header that carries the server reveal token. Declared here, in shared code, because both
 * sides need it: the user-secrets function checks it, and the live-run client (sdk/server.ts) sends
 * it. Browsers cannot send it: CORS never allows it (see CORS_ALLOWED_HEADERS in serve.ts).
 */
export const REVEAL_TOKEN_HEADER = "x-service-server-secret";
