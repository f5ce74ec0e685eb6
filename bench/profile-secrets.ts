/**
 * The layers of GET and PUT /api/secrets for `deno task bench:profile`, from the bare query up to
 * the full request over HTTP.
 */
import { listSecrets, putSecret } from "../functions/user-secrets/vault-store.ts";
import { json } from "../functions/_shared/http/responses.ts";
import { providerReadiness } from "../functions/_shared/vault/provider-routing.ts";
import { SECRET_TYPES } from "../functions/_shared/vault/secret-types.ts";
import { LIST, listBare, upsertBare } from "./floor-queries.ts";
import { type Profiled, readAll, type Step } from "./profile-setup.ts";

/** Limits the profile never reaches: it times the write, not a refusal. */
const UNLIMITED = { writesPerMinute: 1e9, revealsPerMinute: 1e9, revealsPerTokenPerMinute: 1e9 };

export function listSteps(p: Profiled): Step[] {
  const { db, session, userId, context, edge, remote, appUrl, floorUrl, auth, token } = p;
  const fn = p.app.functions;
  const get = (url: string, headers: HeadersInit = auth) => new Request(url, { headers });
  return [
    { name: "bare query (the floor's read)", run: () => listBare(db, userId) },
    {
      name: "the query in a batch transaction (BEGIN, query, COMMIT: one write)",
      run: () => db.batch([{ text: LIST, params: [userId, SECRET_TYPES] }]),
    },
    {
      name: "the service's read: check, role and claims, read under RLS (public.list_user_secrets)",
      run: () => listSecrets(db, session),
    },
    {
      name: "token check alone (verified-token cache hit)",
      run: () => context.sessions.verifyToken(token),
    },
    {
      name: "JSON body alone (statusBody + providers, serialised)",
      run: () =>
        json({
          configured: true,
          project: "p",
          storage: "postgres:public.user_secrets",
          secretTypes: SECRET_TYPES,
          secrets: SECRET_TYPES.map((secretType) => ({
            secretType,
            updatedAt: new Date().toISOString(),
            hint: "…cdef",
          })),
          providers: providerReadiness(SECRET_TYPES),
        }).text(),
    },
    {
      name: "user-secrets function, in-process (router, CORS, token, query, JSON)",
      run: () => readAll(fn["user-secrets"](get("http://x/functions/v1/user-secrets"))),
    },
    {
      name: "+ /api proxy hop, in-process",
      run: () => readAll(fn.api(get("http://x/api/secrets"))),
    },
    {
      name: "+ edge wrapper (atEdge) and the local app's routing",
      run: () =>
        readAll(
          edge(get("http://x/api/secrets"), { remoteAddr: remote, completed: Promise.resolve() }),
        ),
    },
    {
      name: "full request over HTTP (Deno.serve + fetch, same process)",
      run: () => readAll(fetch(get(`${appUrl}/api/secrets`))),
    },
    {
      name: "floor over HTTP (bare handler + the bare query, same process)",
      run: () => readAll(fetch(`${floorUrl}/?user=${userId}`)),
    },
  ];
}

export function putSteps(p: Profiled): Step[] {
  const { db, session, userId, context, appUrl, floorUrl, auth, jsonHeaders } = p;
  const fn = p.app.functions;
  const putBody = (i: number) =>
    JSON.stringify({
      secretType: SECRET_TYPES[i % SECRET_TYPES.length],
      value: `sk-profile-${i}-0123456789abcdef`,
    });
  const put = (url: string, i: number) =>
    new Request(url, { method: "PUT", headers: { ...auth, ...jsonHeaders }, body: putBody(i) });
  return [
    {
      name: "bare upsert (the floor's write)",
      run: (i) => upsertBare(db, userId, SECRET_TYPES[i % SECRET_TYPES.length]),
    },
    {
      name: "the service's write: check, limit, upsert, audit (public.put_user_secret)",
      run: (i) =>
        putSecret(
          db,
          session,
          SECRET_TYPES[i % SECRET_TYPES.length],
          {
            ciphertext: crypto.getRandomValues(new Uint8Array(48)),
            iv: crypto.getRandomValues(new Uint8Array(12)),
            keyId: "k1",
          },
          "…cdef",
          UNLIMITED,
        ),
    },
    {
      name: "AES-256-GCM encryption alone (keyring.encrypt)",
      run: (i) =>
        context.keyring.encrypt(`sk-profile-${i}-0123456789abcdef`, {
          userId,
          secretType: "provider_a_api_key",
        }),
    },
    {
      name: "user-secrets function, in-process",
      run: (i) => readAll(fn["user-secrets"](put("http://x/functions/v1/user-secrets", i))),
    },
    {
      name: "+ /api proxy hop, in-process",
      run: (i) => readAll(fn.api(put("http://x/api/secrets", i))),
    },
    {
      name: "full request over HTTP (same process)",
      run: (i) => readAll(fetch(put(`${appUrl}/api/secrets`, i))),
    },
    {
      name: "floor over HTTP (bare handler + the bare upsert, same process)",
      run: () => readAll(fetch(`${floorUrl}/?user=${userId}`, { method: "PUT" })),
    },
  ];
}
