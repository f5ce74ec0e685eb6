/**
 * The wallet-proof routes as the OpenAPI description (functions/api/openapi.ts) shows them: each
 * route's request schema (the one it validates with) named and described, and an Operation per
 * route with typed examples.
 */
import { body, noContent, ok, type Operation, SESSION } from "../_shared/http/openapi-operation.ts";
import { describeRequest } from "../_shared/http/api-schemas.ts";
import { MAX_PROOF_BODY_BYTES } from "../_shared/http/bodies.ts";
import type { ErrorCode } from "../../protocol/error-codes.ts";
import { nonceAnswer, sessionAnswer } from "./answers.ts";
import { logoutRequest } from "./logout.ts";
import { nonceRequest } from "./nonce.ts";
import { proofRequest } from "./proof.ts";
import { refreshRequest } from "./refresh.ts";

const FUNCTION = "wallet-proof";

describeRequest(
  nonceRequest,
  {
    id: "NonceRequest",
    description:
      "Both optional: the nonce is bound to what is named, and only a proof for it spends it.",
  },
  {
    address: "The wallet's address, any case; the answer then holds the whole message.",
    chainId: "The chain the wallet is on.",
  },
);
describeRequest(proofRequest, { id: "ProofRequest", description: "A signed EIP-4361 message." }, {
  message: "The EIP-4361 text: the nonce answer's `message`, or one built from its fields.",
  signature:
    "EIP-191 personal_sign: 0x and 65 bytes of hex from a key; a contract wallet's may be longer.",
});
describeRequest(refreshRequest, {
  id: "RefreshRequest",
  description: "`retryKeyHash` on a refresh's first try, `retryKey` only on its retry; not both.",
});
describeRequest(logoutRequest, { id: "LogoutRequest" }, {
  scope: '"local" (the default): this session; "global": every session of its creator.',
});

/** The examples are docs/api.md's. */
export const EXAMPLE_ADDRESS = "0xF69A8fDBc627be5Bb2fBBF053187ff6BAdDCe940";
const EXAMPLE_NONCE = "Lk8yywGBBAcZRQ5wiSmSMQ82xn8WvBnH";
const EXAMPLE_STATEMENT = "Sign in to wallet-vault-local. This signature proves you own this " +
  "wallet; it authorizes no transaction and costs no gas.";
/** The examples' message to sign, for the local server, with `statement` and `nonce`. */
export const exampleMessage = (statement: string, nonce: string): string =>
  [
    "127.0.0.1:54321 wants you to sign in with your Ethereum account:",
    EXAMPLE_ADDRESS,
    "",
    statement,
    "",
    "URI: http://127.0.0.1:54321",
    "Version: 1",
    "Chain ID: 1",
    `Nonce: ${nonce}`,
    "Issued At: 2026-11-22T10:00:00.000Z",
    "Expiration Time: 2026-11-22T10:10:00.000Z",
  ].join("\n");
const EXAMPLE_MESSAGE = exampleMessage(EXAMPLE_STATEMENT, EXAMPLE_NONCE);

/** The examples' nonce answer, with `statement` and `nonce`, its message included. */
export const exampleNonceAnswer = (statement: string, nonce: string) => ({
  nonce,
  issuedAt: "2026-11-22T10:00:00.000Z",
  expiresAt: "2026-11-22T10:10:00.000Z",
  domain: "127.0.0.1:54321",
  uri: "http://127.0.0.1:54321",
  chainId: 1,
  version: "1" as const,
  statement,
  message: exampleMessage(statement, nonce),
});
const EXAMPLE_SESSION = {
  access_token: "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJyb2xlIjoiYXV0aGVudGljYXRlZCIs…",
  token_type: "bearer",
  expires_in: 3600,
  expires_at: 1795345260,
  refresh_token: "JNl08tdUJPS5WCt1dHtaWcCNsffbvHp5WSeU6kP8SVE",
  user: { id: "3389174d-38c9-4843-b7e9-1a6d42685e17", wallet_address: EXAMPLE_ADDRESS },
} as const;

/** What checking a signed EIP-4361 message may refuse: a sign-in's proof, a fresh signature. */
export const SIGNED_MESSAGE_ERRORS: readonly ErrorCode[] = [
  "invalid_message",
  "domain_not_allowed",
  "uri_not_allowed",
  "chain_not_allowed",
  "issued_in_future",
  "message_expired",
  "message_not_yet_valid",
  "invalid_signature",
  "signature_mismatch",
  "nonce_unknown",
  "nonce_expired",
  "nonce_used",
  "nonce_mismatch",
  "purpose_mismatch",
  "rate_limited",
  "database_unavailable",
  "chain_unavailable",
];

export const WALLET_PROOF_OPERATIONS: readonly Operation[] = [
  {
    function: FUNCTION,
    path: "/nonce",
    method: "post",
    operationId: "issueNonce",
    tag: "Sign-in",
    summary: "A one-time nonce and the EIP-4361 message to sign",
    description: "Stores a nonce and answers every field of the message to sign; with `address`, " +
      "the whole message too. `domain` and `uri` are the sign-in origin: the request's `Origin` " +
      "when it is an allowed one, else the first allowed. The nonce is bound to the `address` " +
      "and `chainId` named.",
    auth: "none",
    body: body(nonceRequest, { address: EXAMPLE_ADDRESS.toLowerCase(), chainId: 1 }, {
      optional: true,
    }),
    answer: ok(nonceAnswer, exampleNonceAnswer(EXAMPLE_STATEMENT, EXAMPLE_NONCE)),
    errors: ["chain_not_allowed", "rate_limited", "database_unavailable"],
  },
  {
    function: FUNCTION,
    path: "",
    method: "post",
    operationId: "signIn",
    tag: "Sign-in",
    summary: "A signed sign-in message exchanged for a session",
    description: "Checks, in this order: a strict EIP-4361 message; its domain and URI belong to " +
      "an allowed origin; its chain is allowed; its times; the signature recovers to its address " +
      "(or that address's contract wallet accepts it, ERC-1271 / ERC-6492, on chains with an " +
      "RPC); then the nonce, spent once, and the rate limits. The first check that fails answers.",
    auth: "none",
    body: body(proofRequest, { message: EXAMPLE_MESSAGE, signature: `0x${"d84f".repeat(32)}1c` }, {
      maxBytes: MAX_PROOF_BODY_BYTES,
    }),
    answer: ok(sessionAnswer, EXAMPLE_SESSION),
    errors: SIGNED_MESSAGE_ERRORS,
  },
  {
    function: FUNCTION,
    path: "/refresh",
    method: "post",
    operationId: "refreshSession",
    tag: "Sign-in",
    summary: "A refresh token spent for the next pair",
    description: "Each refresh token is usable once. A client that may have to try again sends " +
      "a random retry key's SHA-256 (`retryKeyHash`, base64url) on the first try and the key " +
      "itself (`retryKey`) only on a retry, which then gets the same next pair. A spent token " +
      "sent again otherwise ends the session (`refresh_token_reused`); the first request sent " +
      "again is `409 refresh_replayed`.",
    auth: "none",
    body: body(refreshRequest, {
      refresh_token: EXAMPLE_SESSION.refresh_token,
      retryKeyHash: "s7w2bW502gt9701f6AgGqePpfkWJ5GQUgNSa0DuBMx8",
    }),
    answer: ok(sessionAnswer, EXAMPLE_SESSION),
    errors: [
      "invalid_refresh_token",
      "refresh_token_reused",
      "refresh_replayed",
      "session_revoked",
      "rate_limited",
      "database_unavailable",
    ],
  },
  {
    function: FUNCTION,
    path: "/logout",
    method: "post",
    operationId: "signOut",
    tag: "Sign-in",
    summary: "This session ended, or every session of its creator",
    description: "Like Supabase Auth's `signOut({ scope })`. The session asking must be live.",
    auth: "session",
    body: body(logoutRequest, { scope: "global" }, { optional: true }),
    answer: noContent("Signed out."),
    errors: [...SESSION, "database_unavailable"],
  },
];
