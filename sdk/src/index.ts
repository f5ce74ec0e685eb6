/**
 * `@wallet-vault/client`: what the browser client and the live-run server client share — the
 * error type and its codes, the shapes the service answers with, and the secret-type registry and
 * provider routing, which come from the same source files the service itself runs (protocol/),
 * so a client and the service cannot disagree on a name.
 *
 * The clients are the subpaths: `@wallet-vault/client/browser` and `@wallet-vault/client/server`.
 */
export { SignatureRejectedError, VaultError } from "./errors.ts";
export type { ClientErrorCode, VaultErrorCode, VaultErrorOptions } from "./errors.ts";
export { vaultErrorFrom } from "./supabase.ts";
export type * from "./types.ts";
export {
  isSecretType,
  PROVIDER_IDS,
  PROVIDERS,
  SECRET_TYPE_INFO,
  SECRET_TYPES,
  STEP_KINDS,
} from "../../protocol/secret-types.ts";
export type { ProviderInfo, SecretTypeInfo } from "../../protocol/secret-types.ts";
export {
  DEFAULT_PROVIDER_ORDER,
  isProviderId,
  isStepKind,
  planRoute,
  providerReadiness,
  ROUTES,
} from "../../protocol/provider-routing.ts";
export type {
  RouteError,
  RouteErrorCode,
  RouteOption,
  RoutePlan,
  RouteResult,
} from "../../protocol/provider-routing.ts";
export { ERROR_STATUS } from "../../protocol/error-codes.ts";
export { REVEAL_TOKEN_HEADER } from "../../protocol/reveal-header.ts";
