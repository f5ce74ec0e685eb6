/** DELETE /user-secrets: one stored secret removed. */
import type { SessionRoute } from "../_shared/auth/session-checks.ts";
import { readJson } from "../_shared/http/bodies.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import { json } from "../_shared/http/responses.ts";
import type { DeleteResult } from "./answers.ts";
import { parseDeleteRequest } from "./requests.ts";
import { deleteSecret, type VaultDeps, vaultLimits } from "./vault-store.ts";

export function deleteRoute({ db, config }: VaultDeps): SessionRoute {
  const limits = vaultLimits(config.rateLimits);
  return async function remove(request, session) {
    const { secretType } = parseDeleteRequest(await readJson(request));
    if (!await deleteSecret(db, session, secretType, limits)) {
      throw new ServiceError("secret_not_found", `No ${secretType} is stored for this creator.`, {
        secretType,
      });
    }
    return json({ secretType, deleted: true } satisfies DeleteResult);
  };
}
