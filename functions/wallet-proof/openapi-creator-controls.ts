/**
 * The wallet-proof routes of the creator's controls as the OpenAPI description
 * (functions/api/openapi.ts) shows them, as openapi-sign-in.ts does for sign-in: a fresh signature's
 * nonce, the sessions list, signing sessions out, unlocking live-run access, deleting the account.
 */
import { body, ok, type Operation, SESSION } from "../_shared/http/openapi-operation.ts";
import { describeRequest } from "../_shared/http/api-schemas.ts";
import { MAX_PROOF_BODY_BYTES } from "../_shared/http/bodies.ts";
import { confirmNonceRequest } from "./confirm-nonce.ts";
import {
  accountDeletedAnswer,
  confirmNonceAnswer,
  sessionsAnswer,
  signOutAnswer,
  unlockAnswer,
} from "./creator-control-answers.ts";
import { freshSignatureRequest } from "./fresh-signature.ts";
import { exampleMessage, exampleNonceAnswer, SIGNED_MESSAGE_ERRORS } from "./openapi-sign-in.ts";
import { signOutSessionsRequest } from "./sign-out-sessions.ts";

const FUNCTION = "wallet-proof";
const TAG = "Creator controls";

describeRequest(
  confirmNonceRequest,
  {
    id: "ConfirmNonceRequest",
    description: "The act to authorize; a key's creator may name its wallet's chain.",
  },
  {
    purpose: "`unlock`, `sign_out_sessions` or `delete_account`.",
    sessionIds: "For `sign_out_sessions`, required (and refused for any other purpose): 1 to 50 " +
      "of the creator's session ids, which the message lists as its resources; the sign-out " +
      "must then name exactly these.",
  },
);
describeRequest(freshSignatureRequest, {
  id: "FreshSignatureRequest",
  description: "The confirmation nonce's message, signed by the signed-in wallet.",
});
describeRequest(
  signOutSessionsRequest,
  {
    id: "SignOutSessionsRequest",
    description: "The signed `sign_out_sessions` message and the sessions to end.",
  },
  {
    sessionIds: "1 to 50 of the creator's session ids (GET /api/auth/sessions), exactly those " +
      "the signed message lists as its resources; this one may be among them.",
  },
);

const EXAMPLE_NONCE = "q0BQyNq5cH1aXv3f8YbJk2LzR7mWt4Ds";
const EXAMPLE_STATEMENT = "Unlock live-run access to the keys in your wallet-vault-local vault. " +
  "It authorizes no transaction and costs no gas.";
const EXAMPLE_MESSAGE = exampleMessage(EXAMPLE_STATEMENT, EXAMPLE_NONCE);
const EXAMPLE_PROOF = { message: EXAMPLE_MESSAGE, signature: `0x${"5be1".repeat(32)}1b` };
const EXAMPLE_SESSION_ID = "6f1c2a4e-8d3b-4f5a-9c7e-2b1d0a9f8e7d";

/** What checking a fresh signature may refuse, beyond the session. */
const FRESH_SIGNATURE = SIGNED_MESSAGE_ERRORS;

const FRESH_SIGNATURE_NOTE = "Needs a fresh signature: the message of a confirmation nonce " +
  "(POST /api/auth/confirm/nonce) for this purpose, asked by this session, signed by its wallet " +
  "(a contract wallet's on its own chain, through the same checks and RPC budgets as sign-in). " +
  "A sign-in message, or one for another act, is refused.";

export const CREATOR_WALLET_PROOF_OPERATIONS: readonly Operation[] = [
  {
    function: FUNCTION,
    path: "/confirm/nonce",
    method: "post",
    operationId: "issueConfirmationNonce",
    tag: TAG,
    summary: "A nonce and message for one sensitive act, to be signed by the wallet",
    description: "The nonce is bound to the purpose, to this session, and to the creator's " +
      "address and chain; its message's statement says what the signature authorizes.",
    auth: "session",
    body: body(confirmNonceRequest, { purpose: "unlock" }),
    answer: ok(confirmNonceAnswer, {
      purpose: "unlock",
      ...exampleNonceAnswer(EXAMPLE_STATEMENT, EXAMPLE_NONCE),
    }),
    errors: [...SESSION, "chain_not_allowed", "rate_limited", "database_unavailable"],
  },
  {
    function: FUNCTION,
    path: "/sessions",
    method: "get",
    operationId: "listSessions",
    tag: TAG,
    summary: "The creator's live sessions",
    description: "Newest first: when each began and was last refreshed, its client as it " +
      "described itself, and which one is asking. Read under row-level security.",
    auth: "session",
    answer: ok(sessionsAnswer, {
      sessions: [{
        id: EXAMPLE_SESSION_ID,
        current: true,
        signedInAt: "2026-11-22T10:00:00.000Z",
        lastRefreshedAt: "2026-11-22T11:00:00.000Z",
        expiresAt: "2026-12-22T10:00:00.000Z",
        client: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/131.0 Safari/537.36",
      }],
    }),
    errors: [...SESSION, "database_unavailable"],
  },
  {
    function: FUNCTION,
    path: "/sessions/sign-out",
    method: "post",
    operationId: "signOutSessions",
    tag: TAG,
    summary: "The named sessions of the creator ended, with a fresh signature",
    description: `${FRESH_SIGNATURE_NOTE} The message must list exactly these sessions as its ` +
      "resources (else 401 purpose_mismatch), and every id must name a session of this creator, " +
      "else 404 session_not_found and nothing ends (the nonce stays unspent).",
    auth: "session",
    body: body(signOutSessionsRequest, { ...EXAMPLE_PROOF, sessionIds: [EXAMPLE_SESSION_ID] }, {
      maxBytes: MAX_PROOF_BODY_BYTES,
    }),
    answer: ok(signOutAnswer, { signedOut: 1 }),
    errors: [...SESSION, ...FRESH_SIGNATURE, "session_not_found"],
  },
  {
    function: FUNCTION,
    path: "/unlock",
    method: "post",
    operationId: "unlockLiveRuns",
    tag: TAG,
    summary: "Live-run access unlocked, with a fresh signature",
    description: `${FRESH_SIGNATURE_NOTE} A session alone can lock (POST /api/secrets/lock), ` +
      "never unlock.",
    auth: "session",
    body: body(freshSignatureRequest, EXAMPLE_PROOF, { maxBytes: MAX_PROOF_BODY_BYTES }),
    answer: ok(unlockAnswer, { locked: false }),
    errors: [...SESSION, ...FRESH_SIGNATURE],
  },
  {
    function: FUNCTION,
    path: "/account",
    method: "delete",
    operationId: "deleteAccount",
    tag: TAG,
    summary: "The account deleted, with a fresh signature",
    description: `${FRESH_SIGNATURE_NOTE} Secrets, sessions, rate-limit windows and the wallet ` +
      "mapping go; nonce-use records and the audit trail stay, unlinked. A later sign-in with " +
      "the wallet is a new creator.",
    auth: "session",
    body: body(freshSignatureRequest, EXAMPLE_PROOF, { maxBytes: MAX_PROOF_BODY_BYTES }),
    answer: ok(accountDeletedAnswer, { deleted: true }),
    errors: [...SESSION, ...FRESH_SIGNATURE],
  },
];
