/**
 * Errors are values with a stable `code`. This table is the one place that maps a code to its HTTP
 * status: the functions answer with it (their `ServiceError`, functions/_shared/http/errors.ts,
 * takes its status from here) and the client package reads it (`VaultError` and its codes), so the
 * two cannot drift. Handlers never pick status codes themselves.
 */

export const ERROR_STATUS = {
  // Request shape (HTTP layer)
  invalid_json: 400,
  invalid_request: 400,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  payload_too_large: 413,
  unsupported_media_type: 415,
  misdirected_request: 421,
  rate_limited: 429,
  // Wallet sign-in
  invalid_message: 400,
  invalid_signature: 401,
  signature_mismatch: 401,
  domain_not_allowed: 401,
  uri_not_allowed: 401,
  chain_not_allowed: 401,
  message_not_yet_valid: 401,
  message_expired: 401,
  issued_in_future: 401,
  nonce_unknown: 401,
  nonce_expired: 401,
  nonce_used: 401,
  nonce_mismatch: 401,
  purpose_mismatch: 401,
  invalid_refresh_token: 401,
  refresh_token_reused: 401,
  refresh_replayed: 409,
  // Sessions
  missing_token: 401,
  invalid_token: 401,
  token_expired: 401,
  session_revoked: 401,
  session_not_found: 404,
  // Vault
  invalid_secret_type: 400,
  invalid_value: 400,
  secret_not_found: 404,
  reveal_forbidden: 403,
  reveal_out_of_scope: 403,
  vault_locked: 423,
  encryption_key_unavailable: 500,
  decryption_failed: 500,
  // Server side
  internal_error: 500,
  not_configured: 500,
  upstream_unavailable: 502,
  database_unavailable: 503,
  chain_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;
