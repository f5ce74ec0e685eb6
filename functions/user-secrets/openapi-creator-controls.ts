/**
 * The user-secrets routes of the creator's controls as the OpenAPI description
 * (functions/api/openapi.ts) shows them, as openapi-vault.ts does for the vault: the activity, the
 * live-run lock, the export.
 */
import {
  body,
  type Method,
  ok,
  type Operation,
  SESSION,
} from "../_shared/http/openapi-operation.ts";
import { apiSchemas } from "../_shared/http/api-schemas.ts";
import { activityQuery } from "./activity.ts";
import { accountExport, activityPage, lockState } from "./creator-control-answers.ts";
import { lockRequest } from "./lock.ts";

/** A route of user-secrets', listed under the creator's controls; each needs a session. */
function controlRoute(
  method: Method,
  path: string,
  operation: Omit<Operation, "function" | "path" | "method" | "tag" | "auth">,
): Operation {
  return {
    function: "user-secrets",
    path,
    method,
    tag: "Creator controls",
    auth: "session",
    ...operation,
  };
}

apiSchemas.add(activityQuery.shape.limit, {
  description: "Events per page, 1 to 200; 50 when left out.",
});
apiSchemas.add(activityQuery.shape.cursor, {
  description: "The previous page's `nextCursor`; left out for the newest events.",
});
apiSchemas.add(lockRequest, { id: "LockRequest", description: "Nothing: no body, or `{}`." });

const EXAMPLE_CURSOR = "6576743a3132";
const EXAMPLE_EVENTS = [
  {
    kind: "revealed",
    secretTypes: ["provider_a_org_id", "provider_b_key"],
    at: "2026-11-22T11:00:00.000Z",
    actor: "live_run",
  },
  {
    kind: "replaced",
    secretTypes: ["provider_b_key"],
    at: "2026-11-22T10:01:00.000Z",
    actor: "browser",
  },
] as const;

export const CREATOR_USER_SECRETS_OPERATIONS: readonly Operation[] = [
  controlRoute("get", "/activity", {
    operationId: "listActivity",
    summary: "The creator's activity, newest first, a page at a time",
    description: "Saves, replacements, deletions, reveals (failed and refused ones too), the " +
      "operator's key rotations, locks and unlocks: each with its types, when and who acted. " +
      "Never a value or a token. Read under row-level security.",
    query: activityQuery,
    answer: ok(activityPage, { events: EXAMPLE_EVENTS, nextCursor: EXAMPLE_CURSOR }),
    errors: [...SESSION, "database_unavailable"],
  }),
  controlRoute("get", "/lock", {
    operationId: "getLiveRunLock",
    summary: "Whether live-run access is locked",
    description: "While locked, every reveal of the creator's keys is 423 vault_locked.",
    answer: ok(lockState, { locked: false, lockedAt: null }),
    errors: [...SESSION, "database_unavailable"],
  }),
  controlRoute("post", "/lock", {
    operationId: "lockLiveRuns",
    summary: "Live-run access locked, with the session alone",
    description: "From now on every reveal of the creator's keys is refused (423 vault_locked) " +
      "and recorded as a refused reveal; listing, saving and deleting go on. Locking again keeps " +
      "the first lock's time. Unlocking needs a fresh signature (POST /api/secrets/unlock). A " +
      "lock cannot recall a value already revealed: rotate the key at its provider.",
    body: body(lockRequest, {}, { optional: true }),
    answer: ok(lockState, { locked: true, lockedAt: "2026-11-22T12:00:00.000Z" }),
    errors: [...SESSION, "rate_limited", "database_unavailable"],
  }),
  controlRoute("get", "/export", {
    operationId: "exportAccount",
    summary: "The creator's masked metadata and activity, to keep before leaving",
    description: "The account, the lock, the masked secrets (never a value) and the newest " +
      "10,000 events of the activity (the rest through GET /api/secrets/activity from " +
      "`activityNextCursor`). The service keeps no run history of its own.",
    answer: ok(accountExport, {
      exportedAt: "2026-11-22T12:00:00.000Z",
      creator: {
        id: "3389174d-38c9-4843-b7e9-1a6d42685e17",
        walletAddress: "0xF69A8fDBc627be5Bb2fBBF053187ff6BAdDCe940",
        chainId: null,
        createdAt: "2026-11-22T10:00:00.000Z",
      },
      liveRunAccess: { locked: false, lockedAt: null },
      secrets: [{
        secretType: "provider_b_key",
        updatedAt: "2026-11-22T10:01:00.000Z",
        hint: "…cdef",
        lastUsedAt: "2026-11-22T11:00:00.000Z",
      }],
      activity: EXAMPLE_EVENTS,
      activityNextCursor: null,
    }),
    errors: [...SESSION, "rate_limited", "database_unavailable"],
  }),
];
