/**
 * POST /user-secrets/lock: the kill switch. With the session alone, every reveal of the creator's
 * keys is refused from now on (423 vault_locked, each one recorded as a refused reveal) until the
 * creator unlocks with a fresh signature (wallet-proof's POST /unlock). Listing, saving and
 * deleting go on. A lock cannot recall a value already revealed: rotate the key at its provider.
 */
import { z } from "zod";
import type { SessionRoute } from "../_shared/auth/session-checks.ts";
import { readOptionalJson } from "../_shared/http/bodies.ts";
import { parseRequest } from "../_shared/http/request-issues.ts";
import { json } from "../_shared/http/responses.ts";
import type { LockState } from "./creator-control-answers.ts";
import { lockReveals, type VaultDeps, vaultLimits } from "./vault-store.ts";

/** No body, or an empty object. */
export const lockRequest = z.strictObject({});

export function lockRoute({ db, config }: VaultDeps): SessionRoute {
  const limits = vaultLimits(config.rateLimits);
  return async function lock(request, session) {
    parseRequest(lockRequest, await readOptionalJson(request));
    const lockedAt = await lockReveals(db, session, limits);
    return json({ locked: true, lockedAt: lockedAt.toISOString() } satisfies LockState);
  };
}
