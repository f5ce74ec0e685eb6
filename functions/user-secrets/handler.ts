/**
 * The user-secrets function: the creator's vault. Masked metadata only in reads; plaintext leaves
 * only through /reveal. Writes and reveals are one call each of a checked security definer
 * function (vault-store.ts): `authenticated` itself can write nothing. And the creator's controls
 * that need only the session: its activity, the live-run lock, the export. One module per route;
 * this one only routes, declaring what each route's caller must prove and handing each route what
 * it uses of the context.
 */
import type { ServiceContext } from "../_shared/context.ts";
import { sessionChecks } from "../_shared/auth/session-checks.ts";
import { type Handler, router } from "../_shared/http/router.ts";
import { revealTokenCheck } from "./reveal-token.ts";

export const FUNCTION_NAME = "user-secrets";

export function createUserSecretsHandler(context: ServiceContext): Handler {
  const { config, db, keyring, log, sessions } = context;
  // A valid token suffices on every route: each one's database call checks in its own statement
  // that the session is still live, so no route pays a round trip for that alone.
  const { acceptValidToken, requireValidToken, identityIfValid } = sessionChecks(
    sessions,
    config.publicApiKeys,
  );
  const { requireRevealToken, refuseCredential } = revealTokenCheck({
    db,
    log,
    config,
    identityIfValid,
  });
  // Each route's module is imported with its first request (router.ts: Route's `load`).
  return router(FUNCTION_NAME, [
    {
      method: "GET",
      path: "",
      load: async () => acceptValidToken((await import("./list.ts")).listRoute({ db, config })),
    },
    {
      method: "PUT",
      path: "",
      load: async () =>
        requireValidToken((await import("./put.ts")).putRoute({ db, keyring, config })),
    },
    {
      method: "DELETE",
      path: "",
      load: async () =>
        requireValidToken((await import("./delete.ts")).deleteRoute({ db, config })),
    },
    {
      method: "POST",
      path: "/reveal",
      load: async () => {
        const { revealRoute } = await import("./reveal.ts");
        return requireRevealToken(
          requireValidToken(revealRoute({ db, keyring, log, config, refuseCredential })),
        );
      },
    },
    {
      method: "GET",
      path: "/activity",
      load: async () => requireValidToken((await import("./activity.ts")).activityRoute({ db })),
    },
    {
      method: "GET",
      path: "/lock",
      load: async () => requireValidToken((await import("./lock-state.ts")).lockStateRoute({ db })),
    },
    {
      method: "POST",
      path: "/lock",
      load: async () => requireValidToken((await import("./lock.ts")).lockRoute({ db, config })),
    },
    {
      method: "GET",
      path: "/export",
      load: async () =>
        requireValidToken((await import("./export.ts")).exportRoute({ db, config })),
    },
  ]);
}
