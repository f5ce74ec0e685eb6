/**
 * GET /user-secrets: the configuration, and with a session the creator's masked secrets (type,
 * time, hint, when a live run last revealed it; never a value) and which providers they complete.
 * The list is read as the creator, under row-level security, in the statement that checks the
 * session (vault-store.ts).
 */
import type { AppConfig } from "../_shared/config/config.ts";
import type { Database } from "../_shared/db/db.ts";
import type { SessionTokens, VerifiedSession } from "../_shared/auth/session-tokens.ts";
import { sessionBearer } from "../_shared/http/bodies.ts";
import { json } from "../_shared/http/responses.ts";
import type { Handler } from "../_shared/http/router.ts";
import { providerReadiness } from "../_shared/vault/provider-routing.ts";
import { SECRET_TYPES, type SecretType } from "../_shared/vault/secret-types.ts";
import type { SecretsStatus } from "./answers.ts";
import { listSecrets, type MaskedRow } from "./vault-store.ts";

interface MaskedSecret {
  secretType: SecretType;
  updatedAt: string;
  hint?: string;
  lastUsedAt: string | null;
}

/** A stored row as the list (and the export) shows it. */
export function maskedSecret(row: MaskedRow): MaskedSecret {
  return {
    secretType: row.secret_type,
    updatedAt: row.updated_at.toISOString(),
    ...(row.hint === null ? {} : { hint: row.hint }),
    lastUsedAt: row.last_used_at?.toISOString() ?? null,
  };
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
  const anonymous: SecretsStatus = { ...configurationStatus, secrets: [] };

  async function listMasked(session: VerifiedSession): Promise<MaskedSecret[]> {
    return (await listSecrets(db, session)).map(maskedSecret);
  }

  return async function list(request) {
    const token = sessionBearer(request, config.publicApiKeys);
    // No token: configuration only. A token that fails verification is a 401, never anonymous.
    if (token === null) return json(anonymous);
    const secrets = await listMasked(await sessions.verifyToken(token));
    // Readiness is derived from the stored types' names alone, so the settings page can say what
    // is incomplete.
    const providers = providerReadiness(secrets.map((secret) => secret.secretType));
    return json({ ...configurationStatus, secrets, providers } satisfies SecretsStatus);
  };
}
