/**
 * The wallet-proof function: server nonces, the EIP-4361/EIP-191 proof exchanged for a session,
 * refresh with rotation and reuse detection, and sign-out; and the creator's controls that need a
 * session or a fresh signature (fresh-signature.ts): the sessions list, signing sessions out,
 * unlocking live-run access, deleting the account. One module per route; this one only routes,
 * declaring what each route's caller must prove and handing each route what it uses of the
 * context.
 */
import type { ServiceContext } from "../_shared/context.ts";
import { sessionChecks } from "../_shared/auth/session-checks.ts";
import { createSessionSigner } from "../_shared/auth/session-signer.ts";
import { refreshSuccessors } from "../_shared/auth/refresh-tokens.ts";
import { type Handler, router } from "../_shared/http/router.ts";
import { confirmNonceRoute } from "./confirm-nonce.ts";
import { createContractProofCheck } from "./contract-proof.ts";
import { deleteAccountRoute } from "./delete-account.ts";
import { createFreshSignatureCheck } from "./fresh-signature.ts";
import { logoutRoute } from "./logout.ts";
import { nonceRoute } from "./nonce.ts";
import { proofRoute } from "./proof.ts";
import { refreshRoute } from "./refresh.ts";
import { sessionsRoute } from "./sessions.ts";
import { signOutSessionsRoute } from "./sign-out-sessions.ts";
import { unlockRoute } from "./unlock.ts";
import { DISCOVERY_PATH, discoveryRoute, JWKS_PATH, jwksRoute } from "./well-known.ts";

export const FUNCTION_NAME = "wallet-proof";

export function createWalletProofHandler(context: ServiceContext): Handler {
  const { config, db, log, sessions, signInOrigins } = context;
  // Logout's statement does not check the session, so it asks first; every other route's call
  // checks in its own statement that the session is still live.
  const { requireLiveSession, requireValidToken } = sessionChecks(sessions, config.publicApiKeys);
  const checkContractProof = createContractProofCheck(context);
  const checkFreshSignature = createFreshSignatureCheck({
    db,
    config,
    signInOrigins,
    checkContractProof,
  });
  const signedActions = { db, config, checkFreshSignature };
  // The one place a private key is loaded: wallet-proof alone signs (session-signer.ts).
  const signer = createSessionSigner({
    keys: config.sessionKeys,
    accessTokenTtlSeconds: config.accessTokenTtlSeconds,
  });
  return router(FUNCTION_NAME, [
    // No session: a nonce is anyone's; the proof, or the refresh token, is its own credential.
    { method: "POST", path: "/nonce", handle: nonceRoute({ db, config, signInOrigins }) },
    {
      method: "POST",
      path: "",
      handle: proofRoute({ db, signer, config, signInOrigins, checkContractProof }),
    },
    {
      method: "POST",
      path: "/refresh",
      handle: refreshRoute({
        db,
        signer,
        config,
        log,
        // JWT_SECRET when set, else the vault's active key: either outlives a signing-key switch.
        successorOf: refreshSuccessors(config.jwtSecret ?? config.encryptionKeys[0].key),
      }),
    },
    // Public keys and the issuer, for anyone who verifies a session.
    { method: "GET", path: JWKS_PATH, handle: jwksRoute(config.sessionKeys) },
    {
      method: "GET",
      path: DISCOVERY_PATH,
      handle: discoveryRoute(config.sessionKeys, FUNCTION_NAME),
    },
    { method: "POST", path: "/logout", handle: requireLiveSession(logoutRoute({ db })) },
    {
      method: "POST",
      path: "/confirm/nonce",
      handle: requireValidToken(confirmNonceRoute({ db, config, signInOrigins })),
    },
    { method: "GET", path: "/sessions", handle: requireValidToken(sessionsRoute({ db })) },
    // And a fresh signature of the wallet's, checked by the route (fresh-signature.ts).
    {
      method: "POST",
      path: "/sessions/sign-out",
      handle: requireValidToken(signOutSessionsRoute(signedActions)),
    },
    { method: "POST", path: "/unlock", handle: requireValidToken(unlockRoute(signedActions)) },
    {
      method: "DELETE",
      path: "/account",
      handle: requireValidToken(deleteAccountRoute(signedActions)),
    },
  ]);
}
