/**
 * POST /user-secrets/reveal: plaintext, only to a caller holding both the creator's session and
 * a live-run credential whose scope covers every type asked for. A type that cannot be decrypted
 * fails the whole reveal: a live run must not go ahead silently without a key it asked for.
 */
import type { AppConfig } from "../_shared/config/app-config.ts";
import type { Database } from "../_shared/db/db.ts";
import type { SessionRoute } from "../_shared/auth/session-checks.ts";
import { readOptionalJson } from "../_shared/http/bodies.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import type { Logger } from "../_shared/http/log.ts";
import { json } from "../_shared/http/responses.ts";
import type { SecretType } from "../../protocol/secret-types.ts";
import { type KeyFailure, keyFailure, type Keyring } from "../_shared/vault/vault-crypto.ts";
import type { RevealAnswer } from "./answers.ts";
import { parseRevealRequest } from "./requests.ts";
import { presentedCredential } from "./reveal-token.ts";
import {
  CredentialRefusal,
  readForReveal,
  recordRevealFailure,
  type StoredRow,
  vaultLimits,
} from "./vault-store.ts";
import { rateLimited } from "../_shared/auth/rate-limit.ts";

interface RevealedSecret {
  secretType: SecretType;
  value: string;
  updatedAt: string;
}

export interface RevealDeps {
  readonly db: Database;
  readonly keyring: Keyring;
  readonly log: Logger;
  readonly config: Pick<AppConfig, "rateLimits" | "auditRetentionDays">;
  /** The refusal of an unknown, revoked or expired credential (reveal-token.ts). */
  readonly refuseCredential: (request: Request) => Promise<never>;
}

/** The reveal itself, behind the credential's format check (reveal-token.ts) and the session's. */
export function revealRoute(
  { db, keyring, log, config, refuseCredential }: RevealDeps,
): SessionRoute {
  const limits = vaultLimits(config.rateLimits);

  /**
   * Decrypts every row, collecting the ones that cannot be read with why. Nothing is logged here:
   * this runs before the reveal's commit is known, and a reveal that did not commit happened for
   * no one.
   */
  function decryptAll(rows: readonly StoredRow[], userId: string) {
    const unread: { row: StoredRow; reason: KeyFailure }[] = [];
    const revealed: RevealedSecret[] = [];
    for (const row of rows) {
      try {
        revealed.push({
          secretType: row.secret_type,
          value: keyring.decrypt(
            { ciphertext: row.ciphertext, iv: row.iv, keyId: row.key_id },
            { userId, secretType: row.secret_type },
          ),
          updatedAt: row.updated_at.toISOString(),
        });
      } catch (error) {
        const reason = keyFailure(error);
        if (reason === null) throw error;
        unread.push({ row, reason });
      }
    }
    return { revealed, unread };
  }

  return async function reveal(request, session) {
    const body = await readOptionalJson(request);
    const secretTypes = parseRevealRequest(body);
    // No types named: every type the credential may reveal (its scope narrows it in the statement).
    const everyType = (body as { secretTypes?: unknown } | undefined)?.secretTypes === undefined;
    // The read and its 'reveal' event are one statement, committed before anything is released
    // (as an audit log records a request before it is answered): no value leaves without the
    // event, and a failed audit, or a session that has ended, reads nothing. The rows are
    // decrypted while the commit is under way; a commit that fails drops what was decrypted.
    let read: Awaited<ReturnType<typeof decryptAll>>;
    try {
      read = await readForReveal(
        db,
        session,
        secretTypes,
        presentedCredential(request),
        everyType,
        limits,
        config.auditRetentionDays,
        (rows) => decryptAll(rows, session.userId),
      );
    } catch (error) {
      if (!(error instanceof CredentialRefusal)) throw error;
      if (error.outcome === "credential_refused") return await refuseCredential(request);
      // A credential used for mass reveal (a leaked one): slowed, and the operator told which.
      log.info("reveal_credential_over_limit", {
        credential: error.credentialName ?? "legacy",
        user_id: session.userId,
      });
      throw rateLimited(error.retryAfter);
    }
    const { revealed, unread } = read;
    if (unread.length > 0) {
      const failed = new Map<KeyFailure, SecretType[]>();
      for (const { row, reason } of unread) {
        // Key ids are names, not key material; they tell the operator which key to restore.
        log.error(reason, {
          user_id: session.userId,
          secret_type: row.secret_type,
          key_id: row.key_id,
        });
        failed.set(reason, [...(failed.get(reason) ?? []), row.secret_type]);
      }
      // Nothing is released, and the trail says so: a second write, on this path only.
      const types = unread.map(({ row }) => row.secret_type);
      await recordRevealFailure(db, session, types, unread[0].row.event_id).catch((error) => {
        // The answer below matters more to the caller; the operator sees this in the logs.
        log.error("reveal_failure_not_recorded", {
          user_id: session.userId,
          error: error instanceof Error ? error.name : "unknown",
        });
      });
      throw decryptionFailure(failed);
    }
    return json({ secrets: revealed } satisfies RevealAnswer);
  };
}

/** The error naming each type that cannot be read; a missing key is reported first. */
function decryptionFailure(failed: ReadonlyMap<KeyFailure, SecretType[]>): ServiceError {
  const unavailable = failed.get("encryption_key_unavailable");
  if (unavailable) {
    return new ServiceError(
      "encryption_key_unavailable",
      `The stored ${unavailable.join(", ")} ${
        unavailable.length === 1 ? "is" : "are"
      } encrypted under a key that is not configured; restore that key or save again.`,
      { secretTypes: unavailable },
    );
  }
  const unreadable = failed.get("decryption_failed")!;
  return new ServiceError(
    "decryption_failed",
    `The stored ${unreadable.join(", ")} could not be decrypted; save again.`,
    { secretTypes: unreadable },
  );
}
