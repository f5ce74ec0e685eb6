/** DELETE /user-secrets: one stored secret removed. */
import type { AppConfig } from "../_shared/config/config.ts";
import type { Database } from "../_shared/db/db.ts";
import type { SessionTokens } from "../_shared/auth/session-tokens.ts";
import { readJson, requireSessionToken } from "../_shared/http/bodies.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import { json } from "../_shared/http/responses.ts";
import type { Handler } from "../_shared/http/router.ts";
import type { DeleteResult } from "./answers.ts";
import { parseDeleteRequest } from "./requests.ts";
import { deleteSecret, vaultLimits } from "./vault-store.ts";

export interface DeleteDeps {
  readonly db: Database;
  readonly sessions: SessionTokens;
  readonly config: Pick<AppConfig, "publicApiKeys" | "rateLimits">;
}

export function deleteRoute({ db, sessions, config }: DeleteDeps): Handler {
  const limits = vaultLimits(config.rateLimits);
  return async function remove(request) {
    const session = await sessions.verifyToken(requireSessionToken(request, config.publicApiKeys));
    const { secretType } = parseDeleteRequest(await readJson(request));
    if (!await deleteSecret(db, session, secretType, limits)) {
      throw new ServiceError("secret_not_found", `No ${secretType} is stored for this creator.`, {
        secretType,
      });
    }
    return json({ secretType, deleted: true } satisfies DeleteResult);
  };
}
