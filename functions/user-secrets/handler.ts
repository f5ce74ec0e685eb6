/**
 * The user-secrets function: the creator's vault. Masked metadata only in reads; plaintext leaves
 * only through /reveal, to a caller holding both the creator's session and the server's token.
 * The masked list runs through queryAsLiveSession (the creator's role and claims plus the session's
 * liveness), so row-level security, not only the query's own filter, decides which rows are
 * reachable. Writes and reveals are one call each of a checked security definer function
 * (vault-store.ts): `authenticated` itself can write nothing.
 */
import type { ServiceContext } from "../_shared/context.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import { readJson, sessionBearer } from "../_shared/http/bodies.ts";
import { json } from "../_shared/http/responses.ts";
import { type Handler, router } from "../_shared/http/router.ts";
import { providerReadiness } from "../_shared/vault/provider-routing.ts";
import { SECRET_TYPES, type SecretType } from "../_shared/vault/secret-types.ts";
import { queryAsLiveSession, type VerifiedSession } from "../_shared/auth/session-tokens.ts";
import { hintFor, parseDeleteRequest, parsePutRequest, parseRevealRequest } from "./requests.ts";
import { createRevealTokenCheck, revealTokenBucket } from "./reveal-token.ts";
import {
  deleteSecret,
  putSecret,
  readForReveal,
  recordRevealFailure,
  type StoredRow,
  type VaultLimits,
} from "./vault-store.ts";

export const FUNCTION_NAME = "user-secrets";

interface MaskedSecret {
  secretType: SecretType;
  updatedAt: string;
  hint?: string;
}

interface RevealedSecret {
  secretType: SecretType;
  value: string;
  updatedAt: string;
}

type DecryptionFailure = "encryption_key_unavailable" | "decryption_failed";

export function createUserSecretsHandler(context: ServiceContext): Handler {
  const { config, db, keyring, log, sessions } = context;
  const checkRevealToken = createRevealTokenCheck(config.serverRevealToken);
  const tokenBucket = revealTokenBucket(config.serverRevealToken);
  const limits: VaultLimits = {
    writesPerMinute: config.rateLimits.vaultWritesPerMinute,
    revealsPerMinute: config.rateLimits.revealsPerMinute,
    revealsPerTokenPerMinute: config.rateLimits.revealsPerTokenPerMinute,
  };
  const configurationStatus = {
    configured: config.encryptionKeys.length > 0,
    project: config.projectName,
    storage: `${db.engine}:public.user_secrets`,
    secretTypes: SECRET_TYPES,
  };

  /** The GET body; `secrets` is empty without a session. */
  function statusBody(secrets: readonly MaskedSecret[]) {
    return { ...configurationStatus, secrets };
  }

  const sessionToken = (request: Request) => sessionBearer(request, config.publicApiKeys);

  async function requireSession(request: Request): Promise<VerifiedSession> {
    const token = sessionToken(request);
    if (token === null) {
      throw new ServiceError("missing_token", "Send Authorization: Bearer <token>.");
    }
    // The session's liveness is checked in the request's own transaction (queryAsLiveSession).
    return await sessions.verifyToken(token);
  }

  async function listMasked(session: VerifiedSession): Promise<MaskedSecret[]> {
    const rows = await queryAsLiveSession<
      { secret_type: SecretType; updated_at: Date; hint: string | null }
    >(
      db,
      session,
      `select secret_type, updated_at, hint from public.user_secrets
        where user_id = $1 order by array_position($2::text[], secret_type)`,
      [session.userId, SECRET_TYPES],
    );
    return rows.map((row) => ({
      secretType: row.secret_type,
      updatedAt: row.updated_at.toISOString(),
      ...(row.hint === null ? {} : { hint: row.hint }),
    }));
  }

  async function list(request: Request): Promise<Response> {
    const token = sessionToken(request);
    // No token: configuration only. A token that fails verification is a 401, never anonymous.
    if (token === null) return json(statusBody([]));
    const session = await sessions.verifyToken(token);
    const secrets = await listMasked(session);
    // Readiness is derived from the stored types' names alone, so the settings page can say what
    // is incomplete; the spec's fields stay as they are.
    const providers = providerReadiness(secrets.map((secret) => secret.secretType));
    return json({ ...statusBody(secrets), providers });
  }

  async function put(request: Request): Promise<Response> {
    const session = await requireSession(request);
    const { secretType, value } = parsePutRequest(await readJson(request));
    // Encrypted here, before anything is written: the database only ever sees ciphertext.
    const sealed = await keyring.encrypt(value, { userId: session.userId, secretType });
    const { updatedAt, created } = await putSecret(
      db,
      session,
      secretType,
      sealed,
      hintFor(value),
      limits,
    );
    return json({ secretType, updatedAt: updatedAt.toISOString(), created });
  }

  async function remove(request: Request): Promise<Response> {
    const session = await requireSession(request);
    const { secretType } = parseDeleteRequest(await readJson(request));
    if (!await deleteSecret(db, session, secretType, limits)) {
      throw new ServiceError("secret_not_found", `No ${secretType} is stored for this creator.`, {
        secretType,
      });
    }
    return json({ secretType, deleted: true });
  }

  async function reveal(request: Request): Promise<Response> {
    // The server token first: without it nothing about the session is even looked at.
    await checkRevealToken(request);
    const session = await requireSession(request);
    const secretTypes = parseRevealRequest(await readJson(request));
    // The read and its 'reveal' events are one statement, committed before anything is
    // decrypted or released (as an audit log records a request before it is answered): no value
    // leaves without its event, and a failed audit, or a session that has ended, reads nothing.
    const rows = await readForReveal(db, session, secretTypes, await tokenBucket, limits);
    const { revealed, failed } = await decryptAll(rows, session.userId);
    if (failed.size > 0) {
      // Nothing is released, and the trail says so: a second write, on this path only.
      const unread = new Set([...failed.values()].flat());
      const types = rows.map((row) => row.secret_type).filter((type) => unread.has(type));
      await recordRevealFailure(db, session, types).catch((error) => {
        // The answer below matters more to the caller; the operator sees this in the logs.
        log.error("reveal_failure_not_recorded", {
          user_id: session.userId,
          error: error instanceof Error ? error.name : "unknown",
        });
      });
      throw decryptionFailure(failed);
    }
    return json({ secrets: revealed });
  }

  /**
   * Decrypts every row, collecting the types that cannot be read by reason: a live run must not go
   * ahead silently without a key it asked for. Rows of other types are unaffected by such a failure.
   */
  async function decryptAll(rows: readonly StoredRow[], userId: string) {
    const outcomes = await Promise.allSettled(rows.map((row) =>
      keyring.decrypt(
        { ciphertext: row.ciphertext, iv: row.iv, keyId: row.key_id },
        { userId, secretType: row.secret_type },
      )
    ));
    const failed = new Map<DecryptionFailure, SecretType[]>();
    const revealed: RevealedSecret[] = [];
    outcomes.forEach((outcome, index) => {
      const row = rows[index];
      if (outcome.status === "fulfilled") {
        revealed.push({
          secretType: row.secret_type,
          value: outcome.value,
          updatedAt: row.updated_at.toISOString(),
        });
        return;
      }
      const error = outcome.reason;
      if (
        !(error instanceof ServiceError) ||
        (error.code !== "encryption_key_unavailable" && error.code !== "decryption_failed")
      ) {
        throw error;
      }
      // Key ids are names, not key material; they tell the operator which key to restore.
      log.error(error.code, { user_id: userId, secret_type: row.secret_type, key_id: row.key_id });
      failed.set(error.code, [...(failed.get(error.code) ?? []), row.secret_type]);
    });
    return { revealed, failed };
  }

  /** The error naming each type that cannot be read; a missing key is reported first. */
  function decryptionFailure(failed: ReadonlyMap<DecryptionFailure, SecretType[]>): ServiceError {
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

  return router(FUNCTION_NAME, [
    { method: "GET", path: "", handle: list },
    { method: "PUT", path: "", handle: put },
    { method: "DELETE", path: "", handle: remove },
    { method: "POST", path: "/reveal", handle: reveal },
  ]);
}
