/**
 * What the creator-control routes of user-secrets answer (activity, the live-run lock, the
 * export), as zod schemas the routes type their answers by, for the OpenAPI description as
 * answers.ts's are.
 */
import { z } from "zod";
import { answerSchema } from "../_shared/http/answer-schema.ts";
import { described } from "../_shared/http/api-schemas.ts";
import { secretTypeSchema } from "../_shared/vault/secret-type-schema.ts";
import { maskedSecret } from "./answers.ts";

/** What happened, as the activity list names it. */
export const ACTIVITY_KINDS = [
  "saved",
  "replaced",
  "deleted",
  "revealed",
  "reveal_failed",
  "reveal_refused",
  "rotated",
  "locked",
  "unlocked",
] as const;
export type ActivityKind = typeof ACTIVITY_KINDS[number];

/** Who acted: the creator's browser, a live run (a reveal), the operator (a key rotation). */
export const ACTORS = ["browser", "live_run", "operator"] as const;
export type Actor = typeof ACTORS[number];

/**
 * Why a reveal was refused: its credential (missing, wrong, revoked or expired), the creator's
 * lock, or a type outside the credential's scope.
 */
export const REFUSAL_REASONS = ["reveal_token", "vault_locked", "out_of_scope"] as const;

export const activityEvent = answerSchema(
  "ActivityEvent",
  "One event of the creator's audit trail; never a value or a token.",
  {
    kind: described(z.enum(ACTIVITY_KINDS), "What happened."),
    secretTypes: described(
      z.array(secretTypeSchema).readonly(),
      "The types it touched, in the order every list uses; empty for a lock, an unlock, and a " +
        "reveal refused for its credential (its body is never read).",
    ),
    at: described(z.iso.datetime(), "When (UTC)."),
    actor: described(z.enum(ACTORS), "Who acted."),
    reason: described(
      z.enum(REFUSAL_REASONS),
      "Only for `reveal_refused`: `reveal_token`, `vault_locked` or `out_of_scope`.",
    ).optional(),
    credential: described(
      z.string(),
      "The live-run credential's name (the service that acted, as `image-worker`), on reveals " +
        "and refusals a known credential made; absent on older events. Never the credential.",
    ).optional(),
  },
);
export type ActivityEvent = z.infer<typeof activityEvent>;

const nextCursor = described(
  z.string().nullable(),
  "Pass as `cursor` for the next, older page; null at the trail's start.",
);

/** GET /activity. */
export const activityPage = answerSchema("ActivityPage", "A page of the creator's activity.", {
  events: described(z.array(activityEvent).readonly(), "Newest first."),
  nextCursor,
});
export type ActivityPage = z.infer<typeof activityPage>;

/** GET and POST /lock. */
export const lockState = answerSchema("LockState", "Whether live-run access is locked.", {
  locked: described(z.boolean(), "Live runs' reveals of this creator's keys are refused."),
  lockedAt: described(z.iso.datetime().nullable(), "Since when; null when not locked."),
});
export type LockState = z.infer<typeof lockState>;

/** GET /export. */
export const accountExport = answerSchema(
  "AccountExport",
  "The creator's masked metadata and activity; never a value or a token.",
  {
    exportedAt: z.iso.datetime(),
    creator: z.strictObject({
      id: z.uuid(),
      walletAddress: described(z.string(), "EIP-55 checksummed."),
      chainId: described(
        z.number().int().positive().nullable(),
        "A contract wallet's chain; null for a key (the same creator on every chain).",
      ),
      createdAt: described(z.iso.datetime(), "The first sign-in."),
    }),
    liveRunAccess: lockState,
    secrets: described(z.array(maskedSecret).readonly(), "Masked: never a value."),
    activity: described(
      z.array(activityEvent).readonly(),
      "Newest first, up to 10,000 events; the rest through GET /activity from `activityNextCursor`.",
    ),
    activityNextCursor: nextCursor,
  },
);
export type AccountExport = z.infer<typeof accountExport>;
