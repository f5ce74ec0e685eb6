/**
 * GET /user-secrets: the configuration, and with a session the creator's masked secrets (type,
 * time, hint, when a live run last revealed it; never a value) and which providers they complete.
 * The list is read as the creator, under row-level security, in the statement that checks the
 * session (vault-store.ts).
 */
import type { AppConfig } from "../_shared/config/app-config.ts";
import type { Database } from "../_shared/db/db.ts";
import type { OptionalSessionRoute } from "../_shared/auth/session-checks.ts";
import { json } from "../_shared/http/responses.ts";
import { providerReadiness } from "../../protocol/provider-routing.ts";
import { SECRET_TYPES, type SecretType } from "../../protocol/secret-types.ts";
import type { SecretsStatus } from "./answers.ts";
import { listSecrets, type MaskedRow } from "./vault-store.ts";

interface MaskedSecret {
  secretType: SecretType;
  updatedAt: string;
  hint?: string;
  lastUsedAt: string | null;
  lastUsedBy?: string;
}

/** A stored row as the list (and the export) shows it. */
export function maskedSecret(row: MaskedRow): MaskedSecret {
  // Field by field, in the answer's order: spreading each optional field costs an object.
  const secret = {
    secretType: row.secret_type,
    updatedAt: row.updated_at.toISOString(),
  } as MaskedSecret;
  if (row.hint !== null) secret.hint = row.hint;
  secret.lastUsedAt = row.last_used_at?.toISOString() ?? null;
  if (row.last_used_by !== null) secret.lastUsedBy = row.last_used_by;
  return secret;
}

export interface ListDeps {
  readonly db: Database;
  readonly config: Pick<AppConfig, "encryptionKeys" | "projectName">;
}

export function listRoute({ db, config }: ListDeps): OptionalSessionRoute {
  const configurationStatus = {
    configured: config.encryptionKeys.length > 0,
    project: config.projectName,
    storage: `${db.engine}:public.user_secrets`,
    secretTypes: SECRET_TYPES,
  };
  const anonymous: SecretsStatus = { ...configurationStatus, secrets: [] };

  return async function list(_request, session) {
    // No token: configuration only (a token that fails its check never gets here).
    if (session === null) return json(anonymous);
    const secrets = (await listSecrets(db, session)).map(maskedSecret);
    // Readiness is derived from the stored types' names alone, so the settings page can say what
    // is incomplete.
    const providers = providerReadiness(secrets.map((secret) => secret.secretType));
    return json({ ...configurationStatus, secrets, providers } satisfies SecretsStatus);
  };
}
