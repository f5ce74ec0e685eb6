/**
 * GET /user-secrets: the configuration, and with a session the creator's masked secrets (type,
 * time, hint; never a value) and which providers they complete. The list runs through
 * queryAsLiveSession (the creator's role and claims plus the session's liveness), so row-level
 * security, not only the query's own filter, decides which rows are reachable.
 */
import type { AppConfig } from "../_shared/config/config.ts";
import type { Database } from "../_shared/db/db.ts";
import {
  queryAsLiveSession,
  type SessionTokens,
  type VerifiedSession,
} from "../_shared/auth/session-tokens.ts";
import { sessionBearer } from "../_shared/http/bodies.ts";
import { json } from "../_shared/http/responses.ts";
import type { Handler } from "../_shared/http/router.ts";
import { providerReadiness } from "../_shared/vault/provider-routing.ts";
import { SECRET_TYPES, type SecretType } from "../_shared/vault/secret-types.ts";

interface MaskedSecret {
  secretType: SecretType;
  updatedAt: string;
  hint?: string;
}

export interface ListDeps {
  readonly db: Database;
  readonly sessions: SessionTokens;
  readonly config: Pick<AppConfig, "encryptionKeys" | "projectName" | "publicApiKeys">;
}

export function listRoute({ db, sessions, config }: ListDeps): Handler {
  const configurationStatus = {
    configured: config.encryptionKeys.length > 0,
    project: config.projectName,
    storage: `${db.engine}:public.user_secrets`,
    secretTypes: SECRET_TYPES,
  };

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

  return async function list(request) {
    const token = sessionBearer(request, config.publicApiKeys);
    // No token: configuration only. A token that fails verification is a 401, never anonymous.
    if (token === null) return json({ ...configurationStatus, secrets: [] });
    const secrets = await listMasked(await sessions.verifyToken(token));
    // Readiness is derived from the stored types' names alone, so the settings page can say what
    // is incomplete.
    const providers = providerReadiness(secrets.map((secret) => secret.secretType));
    return json({ ...configurationStatus, secrets, providers });
  };
}
