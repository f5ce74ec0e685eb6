/**
 * `deno task bench:profile`: where one request's time goes, route by route, on PostgreSQL. Each
 * layer a request passes through is timed on its own, in this process, one call at a time (the
 * median of many), from the bare query up to the full request over HTTP:
 *
 *   bare query (the floor's)  →  + transaction wrapper (BEGIN … COMMIT in one write)
 *   →  + role, claims and live-session check (queryAsLiveSession)  →  the function's handler
 *   (token, parsing, crypto, JSON, router, CORS)  →  + the /api proxy hop (in-process)  →  + the
 *   edge wrapper (atEdge)  →  over HTTP (Deno.serve and a fetch client in this same process).
 *
 * The same HTTP path is timed for a bare handler doing only the floor's query, so "HTTP layer"
 * can be read off both. Needs a PostgreSQL (DATABASE_URL, or one on 127.0.0.1:5432); a fresh
 * database is created and dropped. Knobs: PROFILE_ROUNDS (5), PROFILE_CALLS per round (300).
 * Prints a table (µs, median per call) and writes bench/results/profile.json, which
 * `deno task bench:report` adds to bench/README.md.
 */
import { parseConfig } from "../functions/_shared/config/config.ts";
import { createServiceContext } from "../functions/_shared/context.ts";
import { openDatabase } from "../server/database.ts";
import { checkSiweMessage, verifySignature } from "../functions/_shared/auth/siwe.ts";
import { hashRefreshToken, newRefreshToken } from "../functions/_shared/auth/refresh-tokens.ts";
import { SECRET_TYPES } from "../functions/_shared/vault/secret-types.ts";
import { queryAsLiveSession } from "../functions/_shared/auth/session-tokens.ts";
import { json } from "../functions/_shared/http/responses.ts";
import { providerReadiness } from "../functions/_shared/vault/provider-routing.ts";
import { atEdge, createLocalApp } from "../server/app.ts";
import { serverEnv } from "./processes.ts";
import { createDatabase, findPostgres, newAccount } from "./support.ts";

const ROUNDS = Number(Deno.env.get("PROFILE_ROUNDS") ?? 5);
const CALLS = Number(Deno.env.get("PROFILE_CALLS") ?? 300);
const silent = { info() {}, warn() {}, error() {} };

const adminUrl = await findPostgres();
if (adminUrl === null) {
  console.error("bench/profile.ts needs a PostgreSQL (DATABASE_URL or 127.0.0.1:5432)");
  Deno.exit(1);
}
const bench = await createDatabase("postgres", adminUrl);
const env = { ...serverEnv(bench.env), PORT: "0", ALLOWED_ORIGINS: "http://127.0.0.1:54321" };
const config = parseConfig(env);
const db = await openDatabase(config.database);
const context = createServiceContext(config, db, silent);
const app = createLocalApp(context);
const edge = atEdge(app.handler, config.clientIp);
const origin = "http://127.0.0.1:54321";

const LIST = `select secret_type, updated_at, hint from public.user_secrets
  where user_id = $1 order by array_position($2::text[], secret_type)`;
const UPSERT_BARE = `insert into public.user_secrets (user_id, secret_type, ciphertext, iv, key_id)
    values ($1, $2, $3, $4, 'k1')
  on conflict (user_id, secret_type) do update
    set ciphertext = excluded.ciphertext, iv = excluded.iv, updated_at = now()
  returning updated_at, xmax = 0 as created`;
const UPSERT =
  `insert into public.user_secrets as s (user_id, secret_type, ciphertext, iv, key_id, hint)
    values ($1, $2, $3, $4, $5, $6)
  on conflict (user_id, secret_type) do update
    set ciphertext = excluded.ciphertext, iv = excluded.iv, key_id = excluded.key_id,
        hint = excluded.hint,
        updated_at = greatest(now(), s.updated_at + interval '1 microsecond')
  returning updated_at, (xmax = 0) as created`;

// An HTTP server in this process: the app as the edge serves it, and a bare floor handler.
const remote = { hostname: "127.0.0.1", port: 4 } as Deno.NetAddr;
const appServer = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, edge);
const floorServer = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
  const user = new URL(req.url).searchParams.get("user");
  if (req.method === "PUT") {
    const [row] = await db.query<{ updated_at: Date; created: boolean }>(UPSERT_BARE, [
      user,
      "provider_a_api_key",
      crypto.getRandomValues(new Uint8Array(48)),
      crypto.getRandomValues(new Uint8Array(12)),
    ]);
    return Response.json({ updatedAt: row.updated_at.toISOString(), created: row.created });
  }
  const rows = await db.query<{ secret_type: string; updated_at: Date; hint: string | null }>(
    LIST,
    [user, SECRET_TYPES],
  );
  return Response.json({
    secrets: rows.map((r) => ({
      secretType: r.secret_type,
      updatedAt: r.updated_at.toISOString(),
      hint: r.hint,
    })),
  });
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

// What-ifs, created only in this throwaway database: measurements for changes outside bench/
// (the SQL and the driver are not the bench's), so their gain is known before anyone makes them.
await bench.sql(`
  -- GET's session check, role switch and read as one statement: no BEGIN, no COMMIT.
  create function public.profile_list_as_live_session(claims text, sid uuid, uid uuid, types text[])
    returns table (secret_type text, updated_at timestamptz, hint text, live boolean)
    language plpgsql as $$
    declare
      is_live boolean;
    begin
      select exists(select 1 from public.auth_sessions s where s.id = sid and s.user_id = uid
        and s.revoked_at is null and s.expires_at > now()) into is_live;
      perform set_config('request.jwt.claims', claims, true);
      perform set_config('role', case when is_live then 'authenticated' else 'anon' end, true);
      if not is_live then
        return query select null::text, null::timestamptz, null::text, false;
        return;
      end if;
      return query select u.secret_type, u.updated_at, u.hint, true from public.user_secrets u
        where u.user_id = uid order by array_position(types, u.secret_type);
    end $$;
  -- The nonce's rate limit and insert as one statement: one round trip, one commit.
  create function public.profile_issue_nonce(n text, ttl integer, bucket text, max_hits integer)
    returns table (issued_at timestamptz, expires_at timestamptz, hits integer)
    language plpgsql as $$
    declare
      attempt record;
    begin
      select * into attempt from public.hit_rate_limit(bucket, 60);
      if attempt.hits > max_hits then
        return query select null::timestamptz, null::timestamptz, attempt.hits;
        return;
      end if;
      return query insert into public.auth_nonces as a (nonce, expires_at)
        values (n, now() + make_interval(secs => ttl))
        returning a.issued_at, a.expires_at, attempt.hits;
    end $$;
  -- Rate-limit counters that are not WAL-logged: their commits need no flush.
  create unlogged table public.profile_rate_limit_windows (like public.rate_limit_windows including all);
`);
{
  // The what-if read answers what the service's does: the seven rows while the session is live.
  const rows = await db.query<{ live: boolean }>(
    "select * from public.profile_list_as_live_session($1, $2, $3, $4)",
    [JSON.stringify(session.claims), session.sessionId, userId, SECRET_TYPES],
  );
  const ended = await db.query<{ live: boolean }>(
    "select * from public.profile_list_as_live_session($1, $2, $3, $4)",
    [JSON.stringify(session.claims), crypto.randomUUID(), userId, SECRET_TYPES],
  );
  if (rows.length !== 7 || !rows.every((r) => r.live) || ended[0]?.live !== false) {
    throw new Error("the what-if read does not answer as the service does");
  }
}

// ---------------------------------------------------------------------------------------------

type Step = { name: string; run: (i: number) => Promise<unknown> | unknown };
const results: Record<string, { name: string; us: number }[]> = {};

/** Times every step in rounds (interleaved, so a busy moment hits all alike); median µs per call. */
async function profile(route: string, steps: Step[]) {
  const samples = steps.map(() => [] as number[]);
  for (const step of steps) for (let i = 0; i < 50; i++) await step.run(i); // warm-up
  let i = 1000;
  for (let round = 0; round < ROUNDS; round++) {
    for (const [index, step] of steps.entries()) {
      for (let n = 0; n < CALLS; n++) {
        const t0 = performance.now();
        await step.run(i++);
        samples[index].push((performance.now() - t0) * 1000);
      }
    }
  }
  results[route] = steps.map((step, index) => {
    const sorted = samples[index].sort((a, b) => a - b);
    return { name: step.name, us: sorted[Math.floor(sorted.length / 2)] };
  });
  console.log(`\n${route}`);
  for (const { name, us } of results[route]) {
    console.log(`  ${us.toFixed(0).padStart(7)} µs  ${name}`);
  }
}

const get = (url: string, headers: HeadersInit = auth) => new Request(url, { headers });
const readAll = async (response: Response | Promise<Response>) => {
  const r = await response;
  const text = await r.text();
  if (r.status !== 200) throw new Error(`${r.status} ${text}`);
  return text;
};
const fn = app.functions;

await profile("GET /api/secrets", [
  { name: "bare query (the floor's read)", run: () => db.query(LIST, [userId, SECRET_TYPES]) },
  {
    name: "the query in a batch transaction (BEGIN, query, COMMIT: one write)",
    run: () => db.batch([{ text: LIST, params: [userId, SECRET_TYPES] }]),
  },
  {
    name: "+ role, claims and live-session check (queryAsLiveSession)",
    run: () => queryAsLiveSession(db, session, LIST, [userId, SECRET_TYPES]),
  },
  {
    name: "what-if: check, role switch and read as one SQL function call (no BEGIN/COMMIT)",
    run: () =>
      db.query("select * from public.profile_list_as_live_session($1, $2, $3, $4)", [
        JSON.stringify(session.claims),
        session.sessionId,
        userId,
        SECRET_TYPES,
      ]),
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
]);

const putBody = (i: number) =>
  JSON.stringify({
    secretType: SECRET_TYPES[i % SECRET_TYPES.length],
    value: `sk-profile-${i}-0123456789abcdef`,
  });
const put = (url: string, i: number) =>
  new Request(url, { method: "PUT", headers: { ...auth, ...jsonHeaders }, body: putBody(i) });
await profile("PUT /api/secrets", [
  {
    name: "bare upsert (the floor's write)",
    run: (i) =>
      db.query(UPSERT_BARE, [
        userId,
        SECRET_TYPES[i % SECRET_TYPES.length],
        crypto.getRandomValues(new Uint8Array(48)),
        crypto.getRandomValues(new Uint8Array(12)),
      ]),
  },
  {
    name: "the service's upsert in queryAsLiveSession (one write)",
    run: (i) =>
      queryAsLiveSession(db, session, UPSERT, [
        userId,
        SECRET_TYPES[i % SECRET_TYPES.length],
        crypto.getRandomValues(new Uint8Array(48)),
        crypto.getRandomValues(new Uint8Array(12)),
        "k1",
        "…cdef",
      ]),
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
]);

const nonceRequest = (url: string) =>
  new Request(url, { method: "POST", headers: { ...jsonHeaders }, body: "{}" });
await profile("POST /api/auth/nonce", [
  {
    name: "rate-limit upsert alone (public.hit_rate_limit)",
    run: () =>
      db.query("select hits, retry_after from public.hit_rate_limit($1, $2)", [
        "nonce:ip:profile",
        60,
      ]),
  },
  {
    name: "nonce insert alone",
    run: () =>
      db.query(
        `insert into public.auth_nonces (nonce, expires_at)
           values ($1, now() + make_interval(secs => $2)) returning issued_at, expires_at`,
        [crypto.randomUUID().replaceAll("-", ""), 600],
      ),
  },
  {
    name: "the two in a row, as the handler does them (two round trips, two commits)",
    run: async () => {
      await db.query("select hits, retry_after from public.hit_rate_limit($1, $2)", [
        "nonce:ip:profile2",
        60,
      ]);
      await db.query(
        `insert into public.auth_nonces (nonce, expires_at)
           values ($1, now() + make_interval(secs => $2)) returning issued_at, expires_at`,
        [crypto.randomUUID().replaceAll("-", ""), 600],
      );
    },
  },
  {
    name: "what-if: rate limit and insert as one SQL function call (one round trip, one commit)",
    run: () =>
      db.query("select * from public.profile_issue_nonce($1, $2, $3, $4)", [
        crypto.randomUUID().replaceAll("-", ""),
        600,
        "nonce:ip:profile3",
        1_000_000,
      ]),
  },
  {
    name: "what-if: the rate-limit upsert on an unlogged table (commit without WAL flush)",
    run: () =>
      db.query(
        `insert into public.profile_rate_limit_windows as w (bucket, window_start, hits)
           values ($1, date_trunc('minute', now()), 1)
         on conflict (bucket, window_start) do update set hits = w.hits + 1 returning w.hits`,
        ["nonce:ip:profile4"],
      ),
  },
  {
    name: "wallet-proof function, in-process (rate limit, then insert: two writes in a row)",
    run: () =>
      readAll(fn["wallet-proof"](nonceRequest("http://x/functions/v1/wallet-proof/nonce"))),
  },
  {
    name: "+ /api proxy hop and edge wrapper, in-process",
    run: () =>
      readAll(
        edge(nonceRequest("http://x/api/auth/nonce"), {
          remoteAddr: remote,
          completed: Promise.resolve(),
        }),
      ),
  },
  {
    name: "full request over HTTP (same process)",
    run: () => readAll(fetch(nonceRequest(`${appUrl}/api/auth/nonce`))),
  },
]);

// wallet-proof: each call needs its own fresh proof, made before timing.
// Two steps use them, each 50 warm-up calls and ROUNDS × CALLS timed ones.
const proofs: { message: string; signature: string }[] = [];
for (let i = 0; i < 2 * (50 + ROUNDS * CALLS); i++) proofs.push(await freshProof());
let nextProof = 0;
const proofRequest = (url: string) =>
  new Request(url, {
    method: "POST",
    headers: jsonHeaders,
    body: JSON.stringify(proofs[nextProof++]),
  });
const sample = proofs[0];
// Nonces for timing sign_in_with_nonce on its own, inserted in bulk beforehand.
const signInNonces = Array.from(
  { length: 50 + ROUNDS * CALLS },
  () => `profile${crypto.randomUUID().replaceAll("-", "")}`,
);
await db.query(
  "insert into public.auth_nonces (nonce, expires_at) select unnest($1::text[]), now() + interval '1 hour'",
  [signInNonces],
);
// Each its own wallet (a new user, as in the bench) and refresh-token hash, made beforehand too.
const signInWallets = signInNonces.map(() =>
  `0x${
    Array.from(crypto.getRandomValues(new Uint8Array(20)), (b) => b.toString(16).padStart(2, "0"))
      .join("")
  }`
);
let nextSignInNonce = 0;
await profile("POST /api/auth/wallet-proof", [
  {
    name: "EIP-4361 message check alone (parse, origin, clock)",
    run: () =>
      checkSiweMessage(sample.message, {
        origins: [origin],
        chainIds: null,
        now: new Date(),
        clockSkewMs: 60_000,
      }),
  },
  {
    name: "signature check alone (secp256k1 recovery + keccak + EIP-55)",
    run: () => verifySignature(sample.message, sample.signature, newAccountAddress(sample.message)),
  },
  {
    name: "refresh token: new + SHA-256 (crypto.subtle)",
    run: () => hashRefreshToken(newRefreshToken()),
  },
  {
    name: "access token: HS256 JWT sign (jose)",
    run: () =>
      context.sessions.issue({
        userId,
        sessionId: session.sessionId,
        walletAddress: session.walletAddress,
      }),
  },
  {
    name: "rate-limit upsert alone (the client-IP limit, overlapped with the checks)",
    run: () =>
      db.query("select hits, retry_after from public.hit_rate_limit($1, $2)", [
        "proof:ip:profile",
        60,
      ]),
  },
  {
    name: "public.sign_in_with_nonce alone (wallet limit, nonce, user, session, refresh token)",
    run: async () => {
      const nonce = signInNonces[nextSignInNonce];
      const wallet = signInWallets[nextSignInNonce++];
      const [row] = await db.query<{ outcome: string }>(
        "select outcome from public.sign_in_with_nonce($1, $2, $3, $4, $5, $6)",
        [nonce, wallet, crypto.getRandomValues(new Uint8Array(32)), 3600, 1_000_000, 60],
      );
      if (row.outcome !== "signed_in") throw new Error(row.outcome);
    },
  },
  {
    name: "full wallet-proof function, in-process (incl. sign_in_with_nonce)",
    run: () => readAll(fn["wallet-proof"](proofRequest("http://x/functions/v1/wallet-proof"))),
  },
  {
    name: "full request over HTTP (same process)",
    run: () => readAll(fetch(proofRequest(`${appUrl}/api/auth/wallet-proof`))),
  },
]);

async function commit(): Promise<string> {
  try {
    const run = (args: string[]) =>
      new Deno.Command("git", { args, stdout: "piped", stderr: "null" }).output();
    const head = new TextDecoder().decode((await run(["rev-parse", "--short", "HEAD"])).stdout)
      .trim();
    const dirty = (await run(["status", "--porcelain", "--untracked-files=no"])).stdout.length > 0;
    return dirty ? `${head} + uncommitted changes` : head;
  } catch {
    return "unknown";
  }
}

function newAccountAddress(message: string): string {
  return message.split("\n")[1];
}

await Deno.writeTextFile(
  new URL("results/profile.json", import.meta.url),
  JSON.stringify(
    {
      date: new Date().toISOString(),
      commit: await commit(),
      deno: Deno.version.deno,
      loadAverage: Deno.loadavg(),
      rounds: ROUNDS,
      calls: CALLS,
      results,
    },
    null,
    2,
  ) + "\n",
);
await appServer.shutdown();
await floorServer.shutdown();
await db.close();
await bench.drop();
