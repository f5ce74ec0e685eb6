/**
 * POST /user-secrets/reveal: plaintext, only to a caller holding both the creator's session and
 * the server's reveal token. A type that cannot be decrypted fails the whole reveal: a live run
 * must not go ahead silently without a key it asked for.
 */
import type { AppConfig } from "../_shared/config/config.ts";
import type { Database } from "../_shared/db/db.ts";
import { clientIp, rateLimited } from "../_shared/auth/rate-limit.ts";
import type { SessionTokens, VerifiedSession } from "../_shared/auth/session-tokens.ts";
import { readOptionalJson, requireSessionToken } from "../_shared/http/bodies.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import type { Logger } from "../_shared/http/log.ts";
import { json } from "../_shared/http/responses.ts";
import type { Handler } from "../_shared/http/router.ts";
import type { SecretType } from "../_shared/vault/secret-types.ts";
import { type KeyFailure, keyFailure, type Keyring } from "../_shared/vault/vault-crypto.ts";
import type { RevealAnswer } from "./answers.ts";
import { parseRevealRequest } from "./requests.ts";
import {
  createOverBudgetClients,
  createRevealTokenCheck,
  type PresentedToken,
  revealForbidden,
  revealTokenBucket,
  wrongTokenBucket,
} from "./reveal-token.ts";
import {
  readForReveal,
  recordRevealFailure,
  refuseReveal,
  type RevealRefusal,
  type StoredRow,
  vaultLimits,
} from "./vault-store.ts";

interface RevealedSecret {
  secretType: SecretType;
  value: string;
  updatedAt: string;
}

export interface RevealDeps {
  readonly db: Database;
  readonly sessions: SessionTokens;
  readonly keyring: Keyring;
  readonly log: Logger;
  readonly config: Pick<
    AppConfig,
    "clientIp" | "publicApiKeys" | "rateLimits" | "serverRevealToken"
  >;
}

export function revealRoute({ db, sessions, keyring, log, config }: RevealDeps): Handler {
  const limits = vaultLimits(config.rateLimits);
  const checkRevealToken = createRevealTokenCheck(config.serverRevealToken);
  const tokenBucket = revealTokenBucket(config.serverRevealToken);
  const refusalsPerMinute = config.rateLimits.wrongRevealTokensPerIpPerMinute;
  const overBudget = createOverBudgetClients();

  /**
   * A missing or wrong reveal token: counted against the client address's budget (403 within it,
   * then 429), logged, and with a live session recorded in its creator's trail. Only this path
   * counts, so a server holding the right token is never refused by this limit, whatever shares
   * its address. Neither the log nor the trail holds anything of the token.
   */
  async function refuse(request: Request, presented: PresentedToken): Promise<never> {
    const client = clientIp(request, config.clientIp);
    const known = overBudget.retryAfter(client);
    for (const { client: over, refusals } of overBudget.ended()) {
      // One line per client and window for the refusals past its first one over the budget.
      log.info("reveal_refusals_over_budget", { client: over, refusals });
    }
    // Already over in this window: refused without the database, logged in that line.
    if (known !== null) throw rateLimited(known);
    let session: VerifiedSession | null = null;
    try {
      session = await sessions.verifyToken(requireSessionToken(request, config.publicApiKeys));
    } catch (error) {
      if (!(error instanceof ServiceError)) throw error;
    }
    const fields = { client, reason: presented, user_id: session?.userId ?? null };
    let refusal: RevealRefusal;
    try {
      refusal = await refuseReveal(db, wrongTokenBucket(client), session, refusalsPerMinute);
    } catch (error) {
      // The token is wrong whatever the database says; the operator sees the failure here.
      log.error("reveal_refusal_not_counted", {
        ...fields,
        error: error instanceof Error ? error.name : "unknown",
      });
      throw revealForbidden();
    }
    const limited = refusal.hits > refusalsPerMinute;
    log.info("reveal_refused", { ...fields, limited, recorded: refusal.recorded });
    if (!limited) throw revealForbidden();
    overBudget.add(client, refusal.retryAfter);
    throw rateLimited(refusal.retryAfter);
  }

  /**
   * Decrypts every row, collecting the ones that cannot be read with why. Nothing is logged here:
   * this runs before the reveal's commit is known, and a reveal that did not commit happened for
   * no one.
   */
  async function decryptAll(rows: readonly StoredRow[], userId: string) {
    const outcomes = await Promise.allSettled(rows.map((row) =>
      keyring.decrypt(
        { ciphertext: row.ciphertext, iv: row.iv, keyId: row.key_id },
        { userId, secretType: row.secret_type },
      )
    ));
    const unread: { row: StoredRow; reason: KeyFailure }[] = [];
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
      const reason = keyFailure(outcome.reason);
      if (reason === null) throw outcome.reason;
      unread.push({ row, reason });
    });
    return { revealed, unread };
  }

  return async function reveal(request) {
    // The server token first: without it nothing else is looked at, but to count and record the
    // refusal. The right token costs nothing more than the comparison.
    const presented = checkRevealToken(request);
    if (presented !== "right") return await refuse(request, presented);
    const session = await sessions.verifyToken(requireSessionToken(request, config.publicApiKeys));
    const secretTypes = parseRevealRequest(await readOptionalJson(request));
    // The read and its 'reveal' event are one statement, committed before anything is released
    // (as an audit log records a request before it is answered): no value leaves without the
    // event, and a failed audit, or a session that has ended, reads nothing. The rows are
    // decrypted while the commit is under way; a commit that fails drops what was decrypted.
    const { revealed, unread } = await readForReveal(
      db,
      session,
      secretTypes,
      tokenBucket,
      limits,
      (rows) => decryptAll(rows, session.userId),
    );
    if (unread.length > 0) {
      const failed = new Map<KeyFailure, SecretType[]>();
      for (const { row, reason } of unread) {
        // Key ids are names, not key material; they tell the operator which key to restore.
        log.error(reason, {
          user_id: session.userId,
          secret_type: row.secret_type,
          key_id: row.key_id,
        });
        failed.set(reason, [...(failed.get(reason) ?? []), row.secret_type]);
      }
      // Nothing is released, and the trail says so: a second write, on this path only.
      const types = unread.map(({ row }) => row.secret_type);
      await recordRevealFailure(db, session, types).catch((error) => {
        // The answer below matters more to the caller; the operator sees this in the logs.
        log.error("reveal_failure_not_recorded", {
          user_id: session.userId,
          error: error instanceof Error ? error.name : "unknown",
        });
      });
      throw decryptionFailure(failed);
    }
    return json({ secrets: revealed } satisfies RevealAnswer);
  };
}

/** The error naming each type that cannot be read; a missing key is reported first. */
function decryptionFailure(failed: ReadonlyMap<KeyFailure, SecretType[]>): ServiceError {
  const unavailable = failed.get("encryption_key_unavailable");
  if (unavailable) {
    return new ServiceError(
      "encryption_key_unavailable",
      `The stored ${unavailable.join(", ")} ${
        unavailable.length === 1 ? "is" : "are"
      } encrypted under a key that is not configured; restore that key or save again.`,
      { secretTypes: unavailable },
    );
  }
  const unreadable = failed.get("decryption_failed")!;
  return new ServiceError(
    "decryption_failed",
    `The stored ${unreadable.join(", ")} could not be decrypted; save again.`,
    { secretTypes: unreadable },
  );
}
