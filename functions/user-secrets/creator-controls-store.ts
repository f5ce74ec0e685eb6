/**
 * The creator's account and its activity, each one call of a checked database function. The
 * activity is the audit trail (public.secret_events) read as the creator, under row-level
 * security, a page at a time, newest first. Each event is shown as what happened and who acted,
 * never with a value or a token. The cursor is opaque to clients: it names the previous page's
 * last event, and names another creator's event in vain.
 */
import type { Queryable } from "../_shared/db/db.ts";
import { sessionEnded, type TokenIdentity } from "../_shared/auth/session-tokens.ts";
import { fromHex, toHex } from "../_shared/bytes.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import { SECRET_TYPES, type SecretType } from "../../protocol/secret-types.ts";
import type { ActivityEvent, ActivityKind, Actor } from "./creator-control-answers.ts";

export const DEFAULT_ACTIVITY_PAGE = 50;
export const MAX_ACTIVITY_PAGE = 200;

/** The trail's actions as the list names them, and who acts: a first save is 'put'. */
const SHOWN: Readonly<Record<string, readonly [ActivityKind, Actor]>> = {
  put: ["saved", "browser"],
  replace: ["replaced", "browser"],
  delete: ["deleted", "browser"],
  lock: ["locked", "browser"],
  unlock: ["unlocked", "browser"],
  reveal: ["revealed", "live_run"],
  reveal_failed: ["reveal_failed", "live_run"],
  reveal_refused: ["reveal_refused", "live_run"],
  rotate: ["rotated", "operator"],
};

type EventRow = {
  live: boolean;
  id: string;
  occurred_at: Date;
  action: string;
  secret_types: string[];
  reason: string | null;
  /** The live-run credential's name, on events a credential made (issue 42); never the secret. */
  credential_name: string | null;
};

const CURSOR_PREFIX = "evt:";
const CURSOR = /^[0-9a-f]{10,46}$/;

/** The cursor naming event `id` (the id's digits, wrapped). */
export function encodeCursor(id: string): string {
  return toHex(new TextEncoder().encode(`${CURSOR_PREFIX}${id}`));
}

/** The event id a cursor names; invalid_request for anything this service did not hand out. */
// Event ids are bigint: a larger number would fail in the database instead of being refused here.
const MAX_EVENT_ID = 9223372036854775807n;

export function decodeCursor(cursor: string): string {
  let text = "";
  try {
    if (CURSOR.test(cursor)) text = new TextDecoder().decode(fromHex(cursor));
  } catch {
    // not hex: refused below
  }
  const id = text.startsWith(CURSOR_PREFIX) ? text.slice(CURSOR_PREFIX.length) : "";
  if (!/^[1-9][0-9]{0,18}$/.test(id) || BigInt(id) > MAX_EVENT_ID) {
    throw new ServiceError("invalid_request", "cursor: is not a cursor this service gave out.");
  }
  return id;
}

/** Why a reveal was refused: the stored reason, else its credential (missing or wrong). */
function refusalReason(reason: string | null): NonNullable<ActivityEvent["reason"]> {
  return reason === "vault_locked" || reason === "out_of_scope" ? reason : "reveal_token";
}

function shown(row: EventRow): ActivityEvent {
  const [kind, actor] = SHOWN[row.action] ?? ["reveal_refused", "live_run"];
  // In the order every list uses, as the service writes them (most events hold one type).
  const types = SECRET_TYPES.filter((type) => row.secret_types.includes(type));
  return {
    kind,
    secretTypes: types as SecretType[],
    at: row.occurred_at.toISOString(),
    actor,
    ...(row.action === "reveal_refused" ? { reason: refusalReason(row.reason) } : {}),
    // Events written before credentials existed, and refusals of an unknown one, name none.
    ...(row.credential_name === null ? {} : { credential: row.credential_name }),
  };
}

/**
 * Up to `pageSize` events older than the one `beforeId` names (the newest when null), and the
 * cursor for the next page when there are more. An ended session is session_revoked.
 */
export async function readActivity(
  db: Queryable,
  session: TokenIdentity,
  beforeId: string | null,
  pageSize: number,
): Promise<{ events: ActivityEvent[]; nextCursor: string | null }> {
  const rows = await db.query<EventRow>(
    `select live, id::text as id, occurred_at, action, secret_types, reason, credential_name
       from public.list_secret_events($1, $2, $3, $4::bigint, $5)`,
    [JSON.stringify(session.claims), session.sessionId, session.userId, beforeId, pageSize + 1],
  );
  if (rows.length > 0 && !rows[0].live) throw sessionEnded();
  const page = rows.slice(0, pageSize);
  return {
    events: page.map(shown),
    nextCursor: rows.length > pageSize ? encodeCursor(page[page.length - 1].id) : null,
  };
}

export interface CreatorAccount {
  readonly walletAddress: string;
  /** A contract wallet's chain; null for a key. */
  readonly chainId: number | null;
  readonly createdAt: Date;
  /** Since when live-run access is locked (vault-store.ts's lockReveals); null when it is not. */
  readonly lockedAt: Date | null;
}

/** The session's creator; session_revoked when the session has ended. */
export async function creatorAccount(
  db: Queryable,
  session: TokenIdentity,
): Promise<CreatorAccount> {
  const [row] = await db.query<{
    live: boolean;
    wallet_address: string;
    chain_id: string | null;
    created_at: Date;
    reveals_locked_at: Date | null;
  }>(
    `select live, wallet_address, chain_id::text as chain_id, created_at, reveals_locked_at
       from public.creator_account($1, $2)`,
    [session.sessionId, session.userId],
  );
  if (!row.live) throw sessionEnded();
  return {
    walletAddress: row.wallet_address,
    chainId: row.chain_id === null ? null : Number(row.chain_id),
    createdAt: row.created_at,
    lockedAt: row.reveals_locked_at,
  };
}
