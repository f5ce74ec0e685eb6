/**
 * The user-secrets routes as the OpenAPI description (functions/api/openapi.ts) shows them: each
 * route's request schema (the one it validates with) named and described, and an Operation per
 * route with typed examples.
 */
import { body, ok, type Operation, SESSION } from "../_shared/http/openapi-operation.ts";
import { describeRequest } from "../_shared/http/api-schemas.ts";
import { REVEAL_TOKEN_HEADER } from "../../protocol/reveal-header.ts";
import { deleteResult, revealAnswer, saveResult, secretsStatus } from "./answers.ts";
import { deleteBody, putBody, revealBody } from "./requests.ts";

const FUNCTION = "user-secrets";

describeRequest(
  putBody,
  { id: "SaveSecretRequest", description: "One secret, created or replaced." },
  { value: "1 to 4,096 printable ASCII characters (`!` to `~`); never sent back." },
);
describeRequest(deleteBody, { id: "DeleteSecretRequest" });
describeRequest(revealBody, {
  id: "RevealRequest",
  description: "The types to reveal; no body (or no `secretTypes`) reveals every type.",
});

const EXAMPLE_VALUE = "sk-example-0123456789abcdef";

export const USER_SECRETS_OPERATIONS: readonly Operation[] = [
  {
    function: FUNCTION,
    path: "",
    method: "get",
    operationId: "listSecrets",
    tag: "Secrets",
    summary: "The vault's configuration and the creator's masked secrets",
    description: "Without a session: the configuration and `secrets: []`. With one: the " +
      "creator's secrets, masked (never a value), and each provider's readiness. A session " +
      "that fails verification is a 401, never an anonymous answer.",
    auth: "optional session",
    answer: ok(secretsStatus, {
      configured: true,
      project: "wallet-vault-local",
      storage: "pglite:public.user_secrets",
      secretTypes: ["provider_a_api_key", "provider_a_org_id", "provider_b_key"],
      secrets: [
        {
          secretType: "provider_a_org_id",
          updatedAt: "2026-11-22T10:00:00.000Z",
          lastUsedAt: null,
        },
        {
          secretType: "provider_b_key",
          updatedAt: "2026-11-22T10:01:00.000Z",
          hint: "…cdef",
          lastUsedAt: "2026-11-22T11:00:00.000Z",
        },
      ],
      providers: [{
        id: "provider_b",
        label: "Provider B",
        ready: true,
        missing: [],
        stepKinds: ["image", "video"],
      }],
    }),
    errors: ["invalid_token", "token_expired", "session_revoked", "database_unavailable"],
  },
  {
    function: FUNCTION,
    path: "",
    method: "put",
    operationId: "saveSecret",
    tag: "Secrets",
    summary: "One secret saved, encrypted before it is written",
    description: "Creates the creator's secret of this type or replaces it. The value is " +
      "encrypted (AES-256-GCM) in the function; the database only ever holds ciphertext.",
    auth: "session",
    body: body(putBody, { secretType: "provider_b_key", value: EXAMPLE_VALUE }),
    answer: ok(saveResult, {
      secretType: "provider_b_key",
      updatedAt: "2026-11-22T10:01:00.000Z",
      created: true,
    }),
    errors: [
      ...SESSION,
      "invalid_secret_type",
      "invalid_value",
      "rate_limited",
      "database_unavailable",
    ],
  },
  {
    function: FUNCTION,
    path: "",
    method: "delete",
    operationId: "deleteSecret",
    tag: "Secrets",
    summary: "One stored secret deleted",
    description: "Deletes the creator's secret of this type.",
    auth: "session",
    body: body(deleteBody, { secretType: "provider_b_key" }),
    answer: ok(deleteResult, { secretType: "provider_b_key", deleted: true }),
    errors: [
      ...SESSION,
      "invalid_secret_type",
      "secret_not_found",
      "rate_limited",
      "database_unavailable",
    ],
  },
  {
    function: FUNCTION,
    path: "/reveal",
    method: "post",
    operationId: "revealSecrets",
    tag: "Secrets",
    summary: "The creator's values, for live-run servers only",
    description: "Needs the creator's session and the live-run service's credential in " +
      `\`${REVEAL_TOKEN_HEADER}\`, which CORS never lets a page send. A missing, malformed, ` +
      "unknown, revoked or expired credential is refused (403, then 429 past the client's " +
      "budget); a type outside the credential's scope refuses the whole reveal " +
      "(403 `reveal_out_of_scope`, recorded). The reveal is recorded in the creator's audit " +
      "trail, naming the credential, before anything is released; a value that cannot be " +
      "decrypted fails the whole reveal.",
    auth: "session and reveal token",
    body: body(revealBody, { secretTypes: ["provider_b_key"] }, { optional: true }),
    answer: ok(revealAnswer, {
      secrets: [{
        secretType: "provider_b_key",
        value: EXAMPLE_VALUE,
        updatedAt: "2026-11-22T10:01:00.000Z",
      }],
    }),
    errors: [
      "reveal_forbidden",
      ...SESSION,
      "invalid_secret_type",
      "reveal_out_of_scope",
      "vault_locked",
      "rate_limited",
      "encryption_key_unavailable",
      "decryption_failed",
      "database_unavailable",
    ],
  },
];
