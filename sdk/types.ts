/**
 * The shapes both clients read from the service. Types only: the registry's own types come from
 * functions/_shared, so the clients and the service cannot disagree on a secret type's name.
 */
import type { ProviderReadiness } from "../functions/_shared/vault/provider-routing.ts";
import type { SecretType } from "../functions/_shared/vault/secret-types.ts";

export type { ErrorCode } from "../functions/_shared/http/errors.ts";
export type { ProviderId, SecretType, StepKind } from "../functions/_shared/vault/secret-types.ts";
export type { ProviderReadiness };

export interface MaskedSecret {
  readonly secretType: SecretType;
  /** ISO 8601 UTC. */
  readonly updatedAt: string;
  /** A short non-secret reminder of which key this is, when the service keeps one. */
  readonly hint?: string;
  /** When a live run last revealed this value (since it was saved), ISO 8601 UTC; null if never. */
  readonly lastUsedAt: string | null;
}

/** The body of `GET /secrets`. Without a session, `secrets` is empty. */
export interface SecretsStatus {
  readonly configured: boolean;
  readonly project: string;
  readonly storage: string;
  readonly secretTypes: readonly SecretType[];
  readonly secrets: readonly MaskedSecret[];
  /** Per provider: ready, or which types are missing (with a session, on services reporting it). */
  readonly providers?: readonly ProviderReadiness[];
}

/** The body of `PUT /secrets`. */
export interface SaveResult {
  readonly secretType: SecretType;
  readonly updatedAt: string;
  /** false when an existing key of this type was replaced. */
  readonly created: boolean;
}

/** The body of `DELETE /secrets`. */
export interface DeleteResult {
  readonly secretType: SecretType;
  readonly deleted: true;
}

/** One entry of `POST /secrets/reveal` (live-run servers only). */
export interface RevealedSecret {
  readonly secretType: SecretType;
  readonly value: string;
  readonly updatedAt: string;
}
