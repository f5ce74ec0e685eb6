/** PUT /user-secrets: one secret stored (created or replaced), encrypted before it is written. */
import type { AppConfig } from "../_shared/config/app-config.ts";
import type { Database } from "../_shared/db/db.ts";
import type { SessionRoute } from "../_shared/auth/session-checks.ts";
import { readJson } from "../_shared/http/bodies.ts";
import { json } from "../_shared/http/responses.ts";
import type { Keyring } from "../_shared/vault/vault-crypto.ts";
import type { SaveResult } from "./answers.ts";
import { hintFor, parsePutRequest } from "./requests.ts";
import { putSecret, vaultLimits } from "./vault-store.ts";

export interface PutDeps {
  readonly db: Database;
  readonly keyring: Keyring;
  readonly config: Pick<AppConfig, "rateLimits">;
}

export function putRoute({ db, keyring, config }: PutDeps): SessionRoute {
  const limits = vaultLimits(config.rateLimits);
  return async function put(request, session) {
    const { secretType, value } = parsePutRequest(await readJson(request));
    // Encrypted here, before anything is written: the database only ever sees ciphertext.
    const sealed = keyring.encrypt(value, { userId: session.userId, secretType });
    const { updatedAt, created } = await putSecret(
      db,
      session,
      secretType,
      sealed,
      hintFor(value),
      limits,
    );
    return json({ secretType, updatedAt: updatedAt.toISOString(), created } satisfies SaveResult);
  };
}
