/**
 * The wallet-proof function: server nonces, the EIP-4361/EIP-191 proof exchanged for a session,
 * refresh with rotation and reuse detection, and sign-out; and the creator's controls that need a
 * session or a fresh signature (fresh-signature.ts): the sessions list, signing sessions out,
 * unlocking live-run access, deleting the account. One module per route; this one only routes,
 * handing each route what it uses of the context.
 */
import type { ServiceContext } from "../_shared/context.ts";
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
import { refreshSuccessors } from "../_shared/auth/refresh-tokens.ts";

export const FUNCTION_NAME = "wallet-proof";

export function createWalletProofHandler(context: ServiceContext): Handler {
  const { config, db, log, sessions, signInOrigins } = context;
  const checkContractProof = createContractProofCheck(context);
  const checkFreshSignature = createFreshSignatureCheck({
    db,
    config,
    signInOrigins,
    checkContractProof,
  });
  const confirmed = { db, sessions, config, checkFreshSignature };
  return router(FUNCTION_NAME, [
    { method: "POST", path: "/nonce", handle: nonceRoute({ db, config, signInOrigins }) },
    {
      method: "POST",
      path: "",
      handle: proofRoute({ db, sessions, config, signInOrigins, checkContractProof }),
    },
    {
      method: "POST",
      path: "/refresh",
      handle: refreshRoute({
        db,
        sessions,
        config,
        log,
        successorOf: refreshSuccessors(config.jwtSecret),
      }),
    },
    { method: "POST", path: "/logout", handle: logoutRoute({ db, sessions, config }) },
    {
      method: "POST",
      path: "/confirm/nonce",
      handle: confirmNonceRoute({ db, sessions, config, signInOrigins }),
    },
    { method: "GET", path: "/sessions", handle: sessionsRoute({ db, sessions, config }) },
    { method: "POST", path: "/sessions/sign-out", handle: signOutSessionsRoute(confirmed) },
    { method: "POST", path: "/unlock", handle: unlockRoute(confirmed) },
    { method: "DELETE", path: "/account", handle: deleteAccountRoute(confirmed) },
  ]);
}
