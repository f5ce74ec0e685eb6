/**
 * GET /user-secrets/activity?limit=&cursor=: the creator's own activity, newest first, a page at a
 * time: saves, replacements, deletions, reveals (failed and refused ones too), the operator's key
 * rotations, locks and unlocks; each with its types, when and who acted. Never a value or token.
 */
import { z } from "zod";
import type { Database } from "../_shared/db/db.ts";
import type { SessionRoute } from "../_shared/auth/session-checks.ts";
import { parseRequest } from "../_shared/http/request-issues.ts";
import { json } from "../_shared/http/responses.ts";
import {
  decodeCursor,
  DEFAULT_ACTIVITY_PAGE,
  MAX_ACTIVITY_PAGE,
  readActivity,
} from "./creator-controls-store.ts";
import type { ActivityPage } from "./creator-control-answers.ts";
import { queryParameters } from "./query-parameters.ts";

/** The query string: both optional. */
export const activityQuery = z.strictObject({
  limit: z.string().regex(
    new RegExp(`^(?:[1-9]|[1-9][0-9]|1[0-9][0-9]|${MAX_ACTIVITY_PAGE})$`),
    `must be a whole number from 1 to ${MAX_ACTIVITY_PAGE}`,
  ).optional(),
  cursor: z.string().max(64).optional(),
});

export function activityRoute({ db }: { readonly db: Database }): SessionRoute {
  return async function activity(request, session) {
    const query = parseRequest(activityQuery, queryParameters(request));
    const page = await readActivity(
      db,
      session,
      query.cursor === undefined ? null : decodeCursor(query.cursor),
      query.limit === undefined ? DEFAULT_ACTIVITY_PAGE : Number(query.limit),
    );
    return json(page satisfies ActivityPage);
  };
}
