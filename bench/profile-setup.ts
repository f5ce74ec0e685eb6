/**
 * What `deno task bench:profile` (bench/profile.ts) times against: the service in this process on
 * a fresh PostgreSQL database, an HTTP server for it and one for a bare floor handler, and one
 * creator with all seven secrets, signed in through the app itself.
 */
import { parseConfig } from "../functions/_shared/config/config.ts";
import { createServiceContext } from "../functions/_shared/context.ts";
import { openDatabase } from "../server/database.ts";
import { SECRET_TYPES } from "../functions/_shared/vault/secret-types.ts";
import { atEdge, createLocalApp } from "../server/app.ts";
import { listAnswer, upsertAnswer } from "./floor-queries.ts";
import { integerKnob } from "./knobs.ts";
import { serverEnv } from "./processes.ts";
import { createDatabase, newAccount } from "./support.ts";

export const ROUNDS = integerKnob("PROFILE_ROUNDS", 5);
export const CALLS = integerKnob("PROFILE_CALLS", 300);
const silent = { info() {}, warn() {}, error() {} };

/** One layer of a route, timed on its own. */
export type Step = { name: string; run: (i: number) => Promise<unknown> | unknown };

export const readAll = async (response: Response | Promise<Response>) => {
  const r = await response;
  const text = await r.text();
  if (r.status !== 200) throw new Error(`${r.status} ${text}`);
  return text;
};

export type Profiled = Awaited<ReturnType<typeof setUp>>;

/** `adminUrl`: the PostgreSQL server the throwaway database is created on. */
export async function setUp(adminUrl: string) {
  const bench = await createDatabase("postgres", adminUrl);
  const env = { ...serverEnv(bench.env), PORT: "0", ALLOWED_ORIGINS: "http://127.0.0.1:54321" };
  const config = parseConfig(env);
  const db = await openDatabase(config.database);
  const context = createServiceContext(config, db, silent);
  const app = createLocalApp(context);
  const edge = atEdge(app.handler, config.clientIp);
  const origin = "http://127.0.0.1:54321";

  // An HTTP server in this process: the app as the edge serves it, and a bare floor handler.
  const remote = { hostname: "127.0.0.1", port: 4 } as Deno.NetAddr;
  const appServer = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, edge);
  const floorServer = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const user = new URL(req.url).searchParams.get("user");
    return req.method === "PUT"
      ? upsertAnswer(db, user, "provider_a_api_key")
      : listAnswer(db, user);
  });
  const appUrl = `http://127.0.0.1:${appServer.addr.port}`;
  const floorUrl = `http://127.0.0.1:${floorServer.addr.port}`;

  // One creator with all seven secrets, signed in through the app itself.
  async function call(request: Request): Promise<{ status: number; body: string }> {
    const response = await edge(request, { remoteAddr: remote, completed: Promise.resolve() });
    return { status: response.status, body: await response.text() };
  }
  const jsonHeaders = { "content-type": "application/json", origin };
  async function freshProof() {
    const account = newAccount();
    const nonce = await call(
      new Request(`${appUrl}/api/auth/nonce`, {
        method: "POST",
        headers: jsonHeaders,
        body: JSON.stringify({ address: account.address }),
      }),
    );
    const message = JSON.parse(nonce.body).message as string;
    return { message, signature: await account.signMessage({ message }) };
  }
  const signedIn = JSON.parse(
    (await call(
      new Request(`${appUrl}/api/auth/wallet-proof`, {
        method: "POST",
        headers: jsonHeaders,
        body: JSON.stringify(await freshProof()),
      }),
    )).body,
  );
  const token: string = signedIn.access_token;
  const userId: string = signedIn.user.id;
  const auth = { authorization: `Bearer ${token}` };
  for (const secretType of SECRET_TYPES) {
    await call(
      new Request(`${appUrl}/api/secrets`, {
        method: "PUT",
        headers: { ...auth, ...jsonHeaders },
        body: JSON.stringify({ secretType, value: `sk-profile-${secretType}-0123456789abcdef` }),
      }),
    );
  }
  const session = await context.sessions.verifyToken(token);

  return {
    bench,
    db,
    context,
    app,
    edge,
    origin,
    remote,
    appServer,
    floorServer,
    appUrl,
    floorUrl,
    jsonHeaders,
    freshProof,
    token,
    userId,
    auth,
    session,
  };
}
