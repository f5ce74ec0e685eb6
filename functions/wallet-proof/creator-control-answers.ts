/**
 * What the creator-control routes of wallet-proof answer (a fresh signature's nonce, the sessions,
 * signing out, unlocking, deleting the account), as zod schemas the routes type their answers by,
 * for the OpenAPI description as answers.ts's are.
 */
import { z } from "zod";
import { answerSchema } from "../_shared/http/answer-schema.ts";
import { described } from "../_shared/http/api-schemas.ts";
import { messageFields } from "./answers.ts";
import { CONFIRM_PURPOSES } from "./fresh-signature.ts";

const purpose = described(
  z.enum(CONFIRM_PURPOSES),
  "The act the signature authorizes: `unlock` (live-run access), `sign_out_sessions`, " +
    "`delete_account`.",
);

/** POST /confirm/nonce. */
export const confirmNonceAnswer = answerSchema(
  "ConfirmNonceAnswer",
  "A nonce for one sensitive act and the message that authorizes it.",
  {
    purpose,
    nonce: described(
      z.string().regex(/^[A-Za-z0-9]{32}$/),
      "One-time, valid until `expiresAt`, for this purpose and this session only.",
    ),
    ...messageFields({
      chainId: "A contract wallet's own chain; for a key, the chain asked for, else the first " +
        "allowed, else 1.",
      statement: "What the signature authorizes, fixed per purpose.",
    }),
    resources: described(
      z.array(z.string()),
      "For `sign_out_sessions` only: the message's EIP-4361 resources, one `urn:uuid:<id>` per " +
        "session it ends, as asked (lower case, each once).",
    ).optional(),
    message: described(
      z.string(),
      "The whole EIP-4361 message for the signed-in wallet, ready to sign.",
    ),
  },
);
export type ConfirmNonceAnswer = z.infer<typeof confirmNonceAnswer>;

export const creatorSession = answerSchema("CreatorSession", "One live session.", {
  id: described(z.uuid(), "The session, as POST /sessions/sign-out names it."),
  current: described(z.boolean(), "The session this request was made with."),
  signedInAt: described(z.iso.datetime(), "When the session began."),
  lastRefreshedAt: described(
    z.iso.datetime().nullable(),
    "When its refresh token was last used; null if never.",
  ),
  expiresAt: described(z.iso.datetime(), "When it ends however often it is refreshed."),
  client: described(
    z.string().max(160).nullable(),
    "How the client described itself at sign-in (its User-Agent, printable ASCII, cut to 160 " +
      "characters); null if it said nothing.",
  ),
});

/** GET /sessions. */
export const sessionsAnswer = answerSchema("SessionsAnswer", "The creator's live sessions.", {
  sessions: described(
    z.array(creatorSession).readonly(),
    "The creator's live sessions, newest first.",
  ),
});
export type SessionsAnswer = z.infer<typeof sessionsAnswer>;

/** POST /sessions/sign-out. */
export const signOutAnswer = answerSchema("SignOutAnswer", "The named sessions have ended.", {
  signedOut: described(
    z.number().int().min(0),
    "How many of the named sessions were live and are now ended.",
  ),
});
export type SignOutAnswer = z.infer<typeof signOutAnswer>;

/** POST /unlock. */
export const unlockAnswer = answerSchema("UnlockAnswer", "Live runs may reveal again.", {
  locked: z.literal(false),
});
export type UnlockAnswer = z.infer<typeof unlockAnswer>;

/** DELETE /account. */
export const accountDeletedAnswer = answerSchema(
  "AccountDeleted",
  "The account is gone; a later sign-in with the wallet is a new creator.",
  { deleted: z.literal(true) },
);
export type AccountDeletedAnswer = z.infer<typeof accountDeletedAnswer>;
