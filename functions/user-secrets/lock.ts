/**
 * POST /user-secrets/lock: the kill switch. With the session alone, every reveal of the creator's
 * keys is refused from now on (423 vault_locked, each one recorded as a refused reveal) until the
 * creator unlocks with a fresh signature (wallet-proof's POST /unlock). Listing, saving and
 * deleting go on. A lock cannot recall a value already revealed: rotate the key at its provider.
 */
import { z } from "zod";
import type { AppConfig } from "../_shared/config/config.ts";
import type { Database } from "../_shared/db/db.ts";
import type { SessionTokens } from "../_shared/auth/session-tokens.ts";
import { readOptionalJson, requireSessionToken } from "../_shared/http/bodies.ts";
import { parseRequest } from "../_shared/http/request-issues.ts";
import { json } from "../_shared/http/responses.ts";
import type { Handler } from "../_shared/http/router.ts";
import type { LockState } from "./control-answers.ts";
import { lockReveals } from "./vault-lock.ts";
import { vaultLimits } from "./vault-store.ts";

/** No body, or an empty object. */
export const lockRequest = z.strictObject({});

export interface LockDeps {
  readonly db: Database;
  readonly sessions: SessionTokens;
  readonly config: Pick<AppConfig, "publicApiKeys" | "rateLimits">;
}

export function lockRoute({ db, sessions, config }: LockDeps): Handler {
  const limits = vaultLimits(config.rateLimits);
  return async function lock(request) {
    const session = await sessions.verifyToken(requireSessionToken(request, config.publicApiKeys));
    parseRequest(lockRequest, await readOptionalJson(request));
    const lockedAt = await lockReveals(db, session, limits);
    return json({ locked: true, lockedAt: lockedAt.toISOString() } satisfies LockState);
  };
}
