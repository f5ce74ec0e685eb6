/**
 * The public keys that verify sessions, as a JWKS (/.well-known/jwks.json), and an OIDC discovery
 * document naming the issuer and that JWKS (/.well-known/openid-configuration): what jose's
 * createRemoteJWKSet, supabase-js's getClaims, a live-run server and Supabase's third-party auth
 * read. Both are built from the published keys' public members alone (session-keys.ts: publicJwk),
 * so no private member can be answered, and both may be cached for JWKS_MAX_AGE_SECONDS.
 */
import { z } from "zod";
import { publicJwk, type SessionKeys } from "../_shared/auth/session-keys.ts";
import type { Operation } from "../_shared/http/openapi-operation.ts";
import { ok } from "../_shared/http/openapi-operation.ts";
import { answerSchema } from "../_shared/http/answer-schema.ts";
import { described } from "../_shared/http/api-schemas.ts";
import { json } from "../_shared/http/responses.ts";
import { DISCOVERY_PATH, JWKS_PATH } from "./well-known-paths.ts";

/**
 * How long a JWKS may be cached: a standby key must be published at least this long before it
 * signs (docs/operations.md), so every verifier has fetched it by then.
 */
export const JWKS_MAX_AGE_SECONDS = 300;
// Public by design: any origin may read them (a page verifying a token with jose, say).
const CACHED = {
  "cache-control": `public, max-age=${JWKS_MAX_AGE_SECONDS}`,
  "access-control-allow-origin": "*",
};

const base64url = z.string().regex(/^[A-Za-z0-9_-]+$/);
const publishedKey = z.strictObject({
  kid: described(z.string(), "The key's id: the `kid` of the tokens it signed."),
  alg: z.enum(["ES256", "RS256"]),
  use: z.literal("sig"),
  key_ops: z.tuple([z.literal("verify")]),
  kty: z.enum(["EC", "RSA"]),
  crv: z.literal("P-256").optional(),
  x: base64url.optional(),
  y: base64url.optional(),
  n: base64url.optional(),
  e: base64url.optional(),
});

/** GET /.well-known/jwks.json. */
export const jwksAnswer = answerSchema(
  "JwksAnswer",
  "The public keys whose session tokens verify: the one signing, standby and previous keys.",
  { keys: z.array(publishedKey) },
);

/** GET /.well-known/openid-configuration. */
export const discoveryAnswer = answerSchema(
  "DiscoveryAnswer",
  "OIDC discovery: the sessions' issuer and where their keys are published.",
  {
    issuer: described(z.string(), "The `iss` of every session token."),
    jwks_uri: described(z.url(), "This function's /.well-known/jwks.json."),
    id_token_signing_alg_values_supported: z.array(z.enum(["ES256", "RS256", "HS256"])),
    subject_types_supported: z.tuple([z.literal("public")]),
    response_types_supported: z.tuple([z.literal("id_token")]),
  },
);

export function jwksRoute(keys: SessionKeys) {
  // Built once, from public members only: the answer cannot carry a private one.
  const body = JSON.stringify({ keys: keys.published.map(publicJwk) });
  return () =>
    Promise.resolve(
      new Response(body, {
        headers: { "content-type": "application/json; charset=utf-8", ...CACHED },
      }),
    );
}

/**
 * The discovery document. Its jwks_uri is on the issuer's origin when the issuer is a URL (a
 * deployed project's), else on the request's (the local server's).
 */
export function discoveryRoute(keys: SessionKeys, functionName: string) {
  const issuerOrigin = URL.canParse(keys.issuer) ? new URL(keys.issuer).origin : null;
  const algorithms = [...new Set([keys.signing.alg, ...keys.published.map((key) => key.alg)])];
  return (request: Request) => {
    const origin = issuerOrigin ?? new URL(request.url).origin;
    return Promise.resolve(json(
      {
        issuer: keys.issuer,
        jwks_uri: `${origin}/functions/v1/${functionName}${JWKS_PATH}`,
        id_token_signing_alg_values_supported: algorithms,
        subject_types_supported: ["public"],
        response_types_supported: ["id_token"],
      } satisfies z.output<typeof discoveryAnswer>,
      200,
      CACHED,
    ));
  };
}

const EXAMPLE_KEY = {
  kid: "ad3dceee-e4af-4a3b-aef7-86ec952695d0",
  alg: "ES256",
  use: "sig",
  key_ops: ["verify"],
  kty: "EC",
  crv: "P-256",
  x: "P8QkIDvGlIBy4gelq8T-AJOyMktozIZHpvdnxsYmv9w",
  y: "paWT7vm6fjeRV94XBNIykBfZ2iTfrLIVyn9zJOKBbUY",
} satisfies z.output<typeof publishedKey>;

export const WELL_KNOWN_OPERATIONS = (functionName: string): Operation[] => [
  {
    function: functionName,
    path: JWKS_PATH,
    method: "get",
    operationId: "sessionKeys",
    tag: "Sign-in",
    summary: "The public keys that verify session tokens (JWKS)",
    description:
      "Every key a session token may name in its `kid`: the one signing, a standby key " +
      "before a switch, the previous one until its last token has expired. Public members only; " +
      `cacheable for ${JWKS_MAX_AGE_SECONDS} s. The local server answers it at ` +
      "/auth/v1/.well-known/jwks.json too, where supabase-js's getClaims looks.",
    auth: "none",
    answer: ok(jwksAnswer, { keys: [EXAMPLE_KEY] }),
    errors: [],
  },
  {
    function: functionName,
    path: DISCOVERY_PATH,
    method: "get",
    operationId: "sessionIssuer",
    tag: "Sign-in",
    summary: "OIDC discovery: the sessions' issuer and JWKS",
    description: "The `iss` session tokens carry and the URL of their keys, as an OIDC issuer's " +
      `discovery document; cacheable for ${JWKS_MAX_AGE_SECONDS} s.`,
    auth: "none",
    answer: ok(discoveryAnswer, {
      issuer: "https://abcdefghijklmnopqrst.supabase.co/auth/v1",
      jwks_uri: `https://abcdefghijklmnopqrst.supabase.co/functions/v1/${functionName}${JWKS_PATH}`,
      id_token_signing_alg_values_supported: ["ES256"],
      subject_types_supported: ["public"],
      response_types_supported: ["id_token"],
    }),
    errors: [],
  },
];
