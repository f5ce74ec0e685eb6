/**
 * The user-secrets function: the creator's vault. Masked metadata only in reads; plaintext leaves
 * only through /reveal, to a caller holding both the creator's session and the server's token.
 */
import type { ServiceContext } from "../_shared/context.ts";
import { bearerToken, type Handler, json, router } from "../_shared/http.ts";
import { asCreator } from "../_shared/db.ts";
import { SECRET_TYPES, type SecretType } from "../_shared/secret-types.ts";

export const FUNCTION_NAME = "user-secrets";

interface MaskedSecret {
  secretType: SecretType;
  updatedAt: string;
  hint?: string;
}

export function createUserSecretsHandler(context: ServiceContext): Handler {
  const { config, db, sessions } = context;
  const configurationStatus = {
    configured: config.encryptionKeys.length > 0,
    project: config.projectName,
    storage: `${db.engine}:public.user_secrets`,
    secretTypes: SECRET_TYPES,
  };

  async function list(request: Request): Promise<Response> {
    const token = bearerToken(request);
    if (token === null) return json({ ...configurationStatus, secrets: [] });
    const session = await sessions.verify(token);
    const rows = await asCreator(
      db,
      session.claims,
      (tx) =>
        tx.query<{ secret_type: SecretType; updated_at: Date; hint: string | null }>(
          `select secret_type, updated_at, hint from public.user_secrets
          where user_id = $1 order by array_position($2::text[], secret_type)`,
          [session.userId, SECRET_TYPES],
        ),
    );
    const secrets: MaskedSecret[] = rows.map((row) => ({
      secretType: row.secret_type,
      updatedAt: row.updated_at.toISOString(),
      ...(row.hint === null ? {} : { hint: row.hint }),
    }));
    return json({ ...configurationStatus, secrets });
  }

  return router(FUNCTION_NAME, [{ method: "GET", path: "", handle: list }]);
}
