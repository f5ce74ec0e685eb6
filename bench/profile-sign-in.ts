/**
 * The layers of the nonce and of the wallet-proof sign-in for `deno task bench:profile`, from each
 * query alone up to the full request over HTTP.
 */
import { checkSiweMessage, verifySignature } from "../functions/_shared/auth/siwe.ts";
import { hashRefreshToken, newRefreshToken } from "../functions/_shared/auth/refresh-tokens.ts";
import { issueNonceBatch } from "../functions/wallet-proof/nonce.ts";
import { CALLS, type Profiled, readAll, ROUNDS, type Step } from "./profile-setup.ts";

/** The route's own batch for a fresh nonce, unbound, on `bucket` with a limit never reached. */
const nonceBatch = (bucket: string) =>
  issueNonceBatch({
    nonce: crypto.randomUUID().replaceAll("-", ""),
    ttlSeconds: 600,
    address: null,
    chainId: null,
    bucket,
    maxHits: 1_000_000,
    windowSeconds: 60,
  });

export function nonceSteps(p: Profiled): Step[] {
  const { db, edge, remote, appUrl, jsonHeaders } = p;
  const fn = p.app.functions;
  const nonceRequest = (url: string) =>
    new Request(url, { method: "POST", headers: { ...jsonHeaders }, body: "{}" });
  return [
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
      name:
        "the two in a row (two round trips, two commits: the handler before public.issue_nonce)",
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
      name: "public.issue_nonce alone (limit and insert: one round trip, one commit)",
      run: () => {
        const [, call] = nonceBatch("nonce:ip:profile3");
        return db.query(call.text, call.params);
      },
    },
    {
      name: "the service's call: public.issue_nonce, its commit not waiting for the WAL flush",
      run: () => db.batch(nonceBatch("nonce:ip:profile5")),
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
      name: "wallet-proof function, in-process (public.issue_nonce: one call, no flush wait)",
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
  ];
}

/** Makes the fresh proofs, nonces and wallets the timed calls use up: run it right before them. */
export async function walletProofSteps(p: Profiled): Promise<Step[]> {
  const { db, context, session, userId, origin, appUrl, jsonHeaders, freshProof } = p;
  const fn = p.app.functions;
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
  return [
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
      run: () =>
        verifySignature(sample.message, sample.signature, newAccountAddress(sample.message)),
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
  ];
}

function newAccountAddress(message: string): string {
  return message.split("\n")[1];
}
