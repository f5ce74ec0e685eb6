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
import { type Handler, madeOnce, router } from "../_shared/http/router.ts";
import { logChainsWithoutContractWallets } from "./contract-wallet-chains.ts";
import { DISCOVERY_PATH, JWKS_PATH } from "./well-known-paths.ts";

export const FUNCTION_NAME = "wallet-proof";

export function createWalletProofHandler(context: ServiceContext): Handler {
  const { config, db, log, sessions, signInOrigins } = context;
  // Logout's statement does not check the session, so it asks first; every other route's call
  // checks in its own statement that the session is still live.
  const { requireLiveSession, requireValidToken } = sessionChecks(sessions, config.publicApiKeys);
  logChainsWithoutContractWallets(context);
  // Shared by the routes that check a wallet's signature, made with the first of them.
  const contractProofCheck = madeOnce(async () =>
    (await import("./contract-proof.ts")).createContractProofCheck(context)
  );
  const signedActions = madeOnce(async () => {
    const { createFreshSignatureCheck } = await import("./fresh-signature.ts");
    const checkContractProof = await contractProofCheck();
    const checkFreshSignature = createFreshSignatureCheck({
      db,
      config,
      signInOrigins,
      checkContractProof,
    });
    return { db, config, checkFreshSignature };
  });
  // The one place a private key is loaded: wallet-proof alone signs (session-signer.ts).
  const signer = createSessionSigner({
    keys: config.sessionKeys,
    accessTokenTtlSeconds: config.accessTokenTtlSeconds,
  });
  // Each route's module is imported with its first request (router.ts: Route's `load`).
  return router(FUNCTION_NAME, [
    // No session: a nonce is anyone's; the proof, or the refresh token, is its own credential.
    {
      method: "POST",
      path: "/nonce",
      load: async () => (await import("./nonce.ts")).nonceRoute({ db, config, signInOrigins }),
    },
    {
      method: "POST",
      path: "",
      load: async () =>
        (await import("./proof.ts")).proofRoute({
          db,
          signer,
          config,
          signInOrigins,
          checkContractProof: await contractProofCheck(),
        }),
    },
    {
      method: "POST",
      path: "/refresh",
      load: async () =>
        (await import("./refresh.ts")).refreshRoute({
          db,
          signer,
          config,
          log,
          // JWT_SECRET when set, else the vault's active key: either outlives a signing-key switch.
          successorOf: refreshSuccessors(config.jwtSecret ?? config.encryptionKeys[0].key),
        }),
    },
    // Public keys and the issuer, for anyone who verifies a session.
    {
      method: "GET",
      path: JWKS_PATH,
      load: async () => (await import("./well-known.ts")).jwksRoute(config.sessionKeys),
    },
    {
      method: "GET",
      path: DISCOVERY_PATH,
      load: async () =>
        (await import("./well-known.ts")).discoveryRoute(config.sessionKeys, FUNCTION_NAME),
    },
    {
      method: "POST",
      path: "/logout",
      load: async () => requireLiveSession((await import("./logout.ts")).logoutRoute({ db })),
    },
    {
      method: "POST",
      path: "/confirm/nonce",
      load: async () =>
        requireValidToken(
          (await import("./confirm-nonce.ts")).confirmNonceRoute({ db, config, signInOrigins }),
        ),
    },
    {
      method: "GET",
      path: "/sessions",
      load: async () => requireValidToken((await import("./sessions.ts")).sessionsRoute({ db })),
    },
    // And a fresh signature of the wallet's, checked by the route (fresh-signature.ts).
    {
      method: "POST",
      path: "/sessions/sign-out",
      load: async () =>
        requireValidToken(
          (await import("./sign-out-sessions.ts")).signOutSessionsRoute(await signedActions()),
        ),
    },
    {
      method: "POST",
      path: "/unlock",
      load: async () =>
        requireValidToken((await import("./unlock.ts")).unlockRoute(await signedActions())),
    },
    {
      method: "DELETE",
      path: "/account",
      load: async () =>
        requireValidToken(
          (await import("./delete-account.ts")).deleteAccountRoute(await signedActions()),
        ),
    },
  ]);
}
