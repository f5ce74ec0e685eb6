/**
 * The shapes both clients read from the service. Types only: the registry's own types come from
 * protocol/, so the clients and the service cannot disagree on a secret type's name.
 */
import type { ProviderReadiness } from "../../protocol/provider-routing.ts";
import type { SecretType } from "../../protocol/secret-types.ts";
import type { NonceResponse } from "./sign-in-message.ts";

export type { ErrorCode } from "../../protocol/error-codes.ts";
export type { ProviderId, SecretType, StepKind } from "../../protocol/secret-types.ts";
export type { ProviderReadiness };

export interface MaskedSecret {
  readonly secretType: SecretType;
  /** ISO 8601 UTC. */
  readonly updatedAt: string;
  /** A short non-secret reminder of which key this is, when the service keeps one. */
  readonly hint?: string;
  /** When a live run last revealed this value (since it was saved), ISO 8601 UTC; null if never. */
  readonly lastUsedAt: string | null;
  /** The service whose live-run credential made that last reveal (`image-worker`), if named. */
  readonly lastUsedBy?: string;
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

// ---------------------------------------------------------------------------------------------
// Creator controls (the browser client's `controls`)

/** The acts that take a fresh wallet signature, as `POST /auth/confirm/nonce` names them. */
export type ConfirmPurpose = "unlock" | "sign_out_sessions" | "delete_account";

/** The body of `POST /auth/confirm/nonce`: a nonce for one act and the message to sign for it. */
export interface FreshSignatureRequest extends NonceResponse {
  readonly purpose: ConfirmPurpose;
  readonly version: "1";
  /** What the signature authorizes, fixed per purpose. */
  readonly statement: string;
  /**
   * For `sign_out_sessions`: the message's resources, one `urn:uuid:<id>` per session it ends,
   * which the signature covers.
   */
  readonly resources?: readonly string[];
  /** The whole EIP-4361 message for the signed-in wallet. */
  readonly message: string;
}

/** What happened, as the activity list names it. */
export type ActivityKind =
  | "saved"
  | "replaced"
  | "deleted"
  | "revealed"
  | "reveal_failed"
  | "reveal_refused"
  | "rotated"
  | "locked"
  | "unlocked";

/** Who acted: the creator's browser, a live run (a reveal), the operator (a key rotation). */
export type ActivityActor = "browser" | "live_run" | "operator";

/** One event of the creator's audit trail; never a value or a token. */
export interface ActivityEvent {
  readonly kind: ActivityKind;
  /** In the order every list uses; empty for a lock, an unlock and a refused server token. */
  readonly secretTypes: readonly SecretType[];
  /** ISO 8601 UTC. */
  readonly at: string;
  readonly actor: ActivityActor;
  /**
   * Only for `reveal_refused`: a missing or wrong live-run credential, the creator's lock, or a
   * type outside the credential's scope.
   */
  readonly reason?: "reveal_token" | "vault_locked" | "out_of_scope";
  /** The live-run credential's name (`image-worker`) on events one made; absent on older ones. */
  readonly credential?: string;
}

/** The body of `GET /secrets/activity`: newest first. */
export interface ActivityPage {
  readonly events: readonly ActivityEvent[];
  /** The next, older page's cursor; null at the trail's start. */
  readonly nextCursor: string | null;
}

/** One live session of the creator, as `GET /auth/sessions` lists it. */
export interface CreatorSession {
  readonly id: string;
  /** The session the request was made with. */
  readonly current: boolean;
  readonly signedInAt: string;
  /** When its refresh token was last used; null if never. */
  readonly lastRefreshedAt: string | null;
  readonly expiresAt: string;
  /** How the client described itself at sign-in (its User-Agent, cut short); null if unsaid. */
  readonly client: string | null;
}

/** The body of `GET /auth/sessions`: newest first. */
export interface SessionsList {
  readonly sessions: readonly CreatorSession[];
}

/** The body of `POST /auth/sessions/sign-out`. */
export interface SignOutSessionsResult {
  /** How many of the named sessions were live and are now ended. */
  readonly signedOut: number;
}

/** The body of `GET` and `POST /secrets/lock`: whether live runs' reveals are refused. */
export interface LockState {
  readonly locked: boolean;
  /** Since when; null when not locked. */
  readonly lockedAt: string | null;
}

/** The body of `POST /secrets/unlock`. */
export interface UnlockResult {
  readonly locked: false;
}

/** The body of `GET /account/export`: masked metadata and activity, never a value or a token. */
export interface AccountExport {
  readonly exportedAt: string;
  readonly creator: {
    readonly id: string;
    /** EIP-55. */
    readonly walletAddress: string;
    /** A contract wallet's chain; null for a key (the same creator on every chain). */
    readonly chainId: number | null;
    readonly createdAt: string;
  };
  readonly liveRunAccess: LockState;
  readonly secrets: readonly MaskedSecret[];
  /** Newest first, up to 10,000 events; the rest from `activityNextCursor`. */
  readonly activity: readonly ActivityEvent[];
  readonly activityNextCursor: string | null;
}

/** The body of `DELETE /account`. */
export interface AccountDeleteResult {
  readonly deleted: true;
}
