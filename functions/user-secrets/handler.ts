/**
 * The user-secrets function: the creator's vault. Masked metadata only in reads; plaintext leaves
 * only through /reveal. Writes and reveals are one call each of a checked security definer
 * function (vault-store.ts): `authenticated` itself can write nothing. And the creator's controls
 * that need only the session: its activity, the live-run lock, the export. One module per route;
 * this one only routes, handing each route what it uses of the context.
 */
import type { ServiceContext } from "../_shared/context.ts";
import { type Handler, router } from "../_shared/http/router.ts";
import { activityRoute } from "./activity.ts";
import { deleteRoute } from "./delete.ts";
import { exportRoute } from "./export.ts";
import { listRoute } from "./list.ts";
import { lockRoute } from "./lock.ts";
import { lockStateRoute } from "./lock-state.ts";
import { putRoute } from "./put.ts";
import { revealRoute } from "./reveal.ts";

export const FUNCTION_NAME = "user-secrets";

export function createUserSecretsHandler(context: ServiceContext): Handler {
  const { config, db, keyring, log, sessions } = context;
  return router(FUNCTION_NAME, [
    { method: "GET", path: "", handle: listRoute({ db, sessions, config }) },
    { method: "PUT", path: "", handle: putRoute({ db, sessions, keyring, config }) },
    { method: "DELETE", path: "", handle: deleteRoute({ db, sessions, config }) },
    {
      method: "POST",
      path: "/reveal",
      handle: revealRoute({ db, sessions, keyring, log, config }),
    },
    { method: "GET", path: "/activity", handle: activityRoute({ db, sessions, config }) },
    { method: "GET", path: "/lock", handle: lockStateRoute({ db, sessions, config }) },
    { method: "POST", path: "/lock", handle: lockRoute({ db, sessions, config }) },
    { method: "GET", path: "/export", handle: exportRoute({ db, sessions, config }) },
  ]);
}
