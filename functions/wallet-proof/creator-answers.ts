/**
 * What the creator-control routes of wallet-proof answer (a fresh signature's nonce, the sessions,
 * signing out, unlocking, deleting the account), as zod schemas the routes type their answers by,
 * for the OpenAPI description as answers.ts's are.
 */
import { z } from "zod";
import { apiSchemas, described } from "../_shared/http/api-schemas.ts";
import { messageFields } from "./answers.ts";
import { CONFIRM_PURPOSES } from "./fresh-signature.ts";

const purpose = described(
  z.enum(CONFIRM_PURPOSES),
  "The act the signature authorizes: `unlock` (live-run access), `sign_out_sessions`, " +
    "`delete_account`.",
);

/** POST /confirm/nonce. */
export const confirmNonceAnswer = z.strictObject({
  purpose,
  nonce: described(
    z.string().regex(/^[A-Za-z0-9]{32}$/),
    "One-time, valid until `expiresAt`, for this purpose and this session only.",
  ),
  ...messageFields,
  chainId: described(
    z.number().int().positive(),
    "A contract wallet's own chain; for a key, the chain asked for, else the first allowed, " +
      "else 1.",
  ),
  version: z.literal("1"),
  statement: described(z.string(), "What the signature authorizes, fixed per purpose."),
  message: described(
    z.string(),
    "The whole EIP-4361 message for the signed-in wallet, ready to sign.",
  ),
}).register(apiSchemas, {
  id: "ConfirmNonceAnswer",
  description: "A nonce for one sensitive act and the message that authorizes it.",
});
export type ConfirmNonceAnswer = z.infer<typeof confirmNonceAnswer>;

export const creatorSession = z.strictObject({
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
}).register(apiSchemas, { id: "CreatorSession", description: "One live session." });

/** GET /sessions. */
export const sessionsAnswer = z.strictObject({
  sessions: described(
    z.array(creatorSession).readonly(),
    "The creator's live sessions, newest first.",
  ),
}).register(apiSchemas, { id: "SessionsAnswer", description: "The creator's live sessions." });
export type SessionsAnswer = z.infer<typeof sessionsAnswer>;

/** POST /sessions/sign-out. */
export const signOutAnswer = z.strictObject({
  signedOut: described(
    z.number().int().min(0),
    "How many of the named sessions were live and are now ended.",
  ),
}).register(apiSchemas, { id: "SignOutAnswer", description: "The named sessions have ended." });
export type SignOutAnswer = z.infer<typeof signOutAnswer>;

/** POST /unlock. */
export const unlockAnswer = z.strictObject({
  locked: z.literal(false),
}).register(apiSchemas, { id: "UnlockAnswer", description: "Live runs may reveal again." });
export type UnlockAnswer = z.infer<typeof unlockAnswer>;

/** DELETE /account. */
export const accountDeletedAnswer = z.strictObject({
  deleted: z.literal(true),
}).register(apiSchemas, {
  id: "AccountDeleted",
  description: "The account is gone; a later sign-in with the wallet is a new creator.",
});
export type AccountDeletedAnswer = z.infer<typeof accountDeletedAnswer>;
