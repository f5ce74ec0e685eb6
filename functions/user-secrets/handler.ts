/**
 * The user-secrets function: the creator's vault. Masked metadata only in reads; plaintext leaves
 * only through /reveal, to a caller holding both the creator's session and the server's token.
 * Every query for a creator runs through queryAsLiveSession (the creator's role and claims plus
 * the session's liveness), so row-level security, not only these queries' own filters, decides which rows are reachable.
 */
import type { ServiceContext } from "../_shared/context.ts";
import { ServiceError } from "../_shared/errors.ts";
import { type Handler, json, readJson, router, sessionBearer } from "../_shared/http.ts";
import { providerReadiness } from "../_shared/provider-routing.ts";
import { SECRET_TYPES, type SecretType } from "../_shared/secret-types.ts";
import { queryAsLiveSession, type VerifiedSession } from "../_shared/session-tokens.ts";
import { hintFor, parseDeleteRequest, parsePutRequest, parseRevealRequest } from "./requests.ts";
import { createRevealTokenCheck } from "./reveal-token.ts";

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

type StoredRow = {
  secret_type: SecretType;
  ciphertext: Uint8Array;
  iv: Uint8Array;
  key_id: string;
  updated_at: Date;
};

export function createUserSecretsHandler(context: ServiceContext): Handler {
  const { config, db, keyring, log, sessions } = context;
  const checkRevealToken = createRevealTokenCheck(config.serverRevealToken);
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
    const [row] = await queryAsLiveSession<{ updated_at: Date; created: boolean }>(
      db,
      session,
      // updated_at always moves forward on a replace, even if the clock stepped back, so the
      // audit trigger tells a creator's put from a key rotation (which keeps updated_at).
      `insert into public.user_secrets as s (user_id, secret_type, ciphertext, iv, key_id, hint)
         values ($1, $2, $3, $4, $5, $6)
       on conflict (user_id, secret_type) do update
         set ciphertext = excluded.ciphertext, iv = excluded.iv, key_id = excluded.key_id,
             hint = excluded.hint,
             updated_at = greatest(now(), s.updated_at + interval '1 microsecond')
       returning updated_at, (xmax = 0) as created`,
      [session.userId, secretType, sealed.ciphertext, sealed.iv, sealed.keyId, hintFor(value)],
    );
    return json({ secretType, updatedAt: row.updated_at.toISOString(), created: row.created });
  }

  async function remove(request: Request): Promise<Response> {
    const session = await requireSession(request);
    const { secretType } = parseDeleteRequest(await readJson(request));
    const deleted = await queryAsLiveSession(
      db,
      session,
      "delete from public.user_secrets where user_id = $1 and secret_type = $2 returning 1",
      [session.userId, secretType],
    );
    if (deleted.length === 0) {
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
    const rows = await queryAsLiveSession<StoredRow>(
      db,
      session,
      `select secret_type, ciphertext, iv, key_id, updated_at from public.user_secrets
        where user_id = $1 and secret_type = any($2::text[])
        order by array_position($3::text[], secret_type)`,
      [session.userId, secretTypes, SECRET_TYPES],
    );
    const secrets = await decryptAll(rows, session.userId);
    // Recorded before anything is released: no value leaves without its audit event, and a failed
    // audit, or a session that ended meanwhile, releases nothing.
    if (secrets.length > 0) {
      await queryAsLiveSession(db, session, "select public.record_secret_reveal($1::text[])", [
        secrets.map((secret) => secret.secretType),
      ]);
    }
    return json({ secrets });
  }

  /**
   * Decrypts every row or fails naming each type that cannot be read: a live run must not go ahead
   * silently without a key it asked for. Rows of other types are unaffected by such a failure.
   */
  async function decryptAll(rows: readonly StoredRow[], userId: string) {
    const outcomes = await Promise.allSettled(rows.map((row) =>
      keyring.decrypt(
        { ciphertext: row.ciphertext, iv: row.iv, keyId: row.key_id },
        { userId, secretType: row.secret_type },
      )
    ));
    const failed = new Map<"encryption_key_unavailable" | "decryption_failed", SecretType[]>();
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
    const unavailable = failed.get("encryption_key_unavailable");
    if (unavailable) {
      throw new ServiceError(
        "encryption_key_unavailable",
        `The stored ${unavailable.join(", ")} ${
          unavailable.length === 1 ? "is" : "are"
        } encrypted under a key that is not configured; restore that key or save again.`,
        { secretTypes: unavailable },
      );
    }
    const unreadable = failed.get("decryption_failed");
    if (unreadable) {
      throw new ServiceError(
        "decryption_failed",
        `The stored ${unreadable.join(", ")} could not be decrypted; save again.`,
        { secretTypes: unreadable },
      );
    }
    return revealed;
  }

  return router(FUNCTION_NAME, [
    { method: "GET", path: "", handle: list },
    { method: "PUT", path: "", handle: put },
    { method: "DELETE", path: "", handle: remove },
    { method: "POST", path: "/reveal", handle: reveal },
  ]);
}
