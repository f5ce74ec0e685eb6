/**
 * What the wallet-proof routes answer, as zod schemas: the routes type their answers by them
 * (`satisfies`, so a field added to an answer and not here fails the type check), and the OpenAPI
 * description (functions/api/openapi.ts) is generated from them.
 */
import { z } from "zod";
import { answerSchema } from "../_shared/http/answer-schema.ts";
import { described } from "../_shared/http/api-schemas.ts";

const address = described(
  z.string().regex(/^0x[0-9a-fA-F]{40}$/),
  "The wallet's address, EIP-55 checksummed.",
);

/**
 * The fields of the EIP-4361 message to sign that every nonce answer carries after the nonce, with
 * what the chain and the statement are for that answer.
 */
export function messageFields(about: { readonly chainId: string; readonly statement: string }) {
  return {
    issuedAt: described(z.iso.datetime(), "The message's Issued At."),
    expiresAt: described(z.iso.datetime(), "The message's Expiration Time: the nonce's end."),
    domain: described(z.string(), "The message's domain: the sign-in origin's host[:port]."),
    uri: described(z.string(), "The message's URI: the sign-in origin."),
    chainId: described(z.number().int().positive(), about.chainId),
    version: z.literal("1"),
    statement: described(z.string(), about.statement),
  };
}

/** POST /nonce. */
export const nonceAnswer = answerSchema(
  "NonceAnswer",
  "A stored nonce and every field of the EIP-4361 message to sign.",
  {
    nonce: described(
      z.string().regex(/^[A-Za-z0-9]{32}$/),
      "One-time, valid until `expiresAt`; spent by the proof that names it.",
    ),
    ...messageFields({
      chainId: "The chain asked for, else the first allowed one, else 1.",
      statement: "The message's statement.",
    }),
    message: described(
      z.string(),
      "The whole EIP-4361 message with the EIP-55 address, ready to sign; only when the request named the address.",
    ).optional(),
  },
);
export type NonceAnswer = z.infer<typeof nonceAnswer>;

/** POST /wallet-proof and POST /refresh: Supabase Auth's session shape. */
export const sessionAnswer = answerSchema(
  "Session",
  "A session: an access token and the refresh token that replaces it.",
  {
    access_token: described(
      z.string(),
      "An HS256 JWT for `Authorization: Bearer`, checked against the live session on every use.",
    ),
    token_type: z.literal("bearer"),
    expires_in: described(z.number().int().positive(), "Seconds the access token is valid for."),
    expires_at: described(
      z.number().int().positive(),
      "When the access token expires, in epoch seconds.",
    ),
    refresh_token: described(
      z.string(),
      "Usable once, for the next pair; sent again it ends the session.",
    ),
    user: z.strictObject({
      id: described(z.uuid(), "The creator: one per wallet (per wallet and chain for a contract)."),
      wallet_address: address,
    }),
  },
);
export type SessionAnswer = z.infer<typeof sessionAnswer>;
