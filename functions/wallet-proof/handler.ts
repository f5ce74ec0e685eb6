/**
 * The wallet-proof function: server nonces, the EIP-4361/EIP-191 proof exchanged for a session,
 * refresh with rotation and reuse detection, and sign-out.
 */
import { setImmediate } from "node:timers";
import { z } from "zod";
import type { ServiceContext } from "../_shared/context.ts";
import { MAX_CONTRACT_SIGNATURE_BYTES } from "../_shared/chain/contract-signatures.ts";
import { checksumAddress } from "../_shared/auth/eth.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import { MAX_PROOF_BODY_BYTES, readJson, sessionBearer } from "../_shared/http/bodies.ts";
import { json } from "../_shared/http/responses.ts";
import { type Handler, router } from "../_shared/http/router.ts";
import {
  clientIp,
  enforceRateLimit,
  RATE_LIMIT_WINDOW_SECONDS,
  rateLimited,
} from "../_shared/auth/rate-limit.ts";
import { hashRefreshToken, newRefreshToken } from "../_shared/auth/refresh-tokens.ts";
import { describeIssue } from "../_shared/http/request-issues.ts";
import {
  buildSiweMessage,
  checkSiweMessage,
  generateNonce,
  MAX_MESSAGE_LENGTH,
  type SiweFields,
  toStatement,
  verifySignature,
} from "../_shared/auth/siwe.ts";
import { createContractProofCheck, nonceRefusal } from "./contract-proof.ts";

export const FUNCTION_NAME = "wallet-proof";

const CLOCK_SKEW_MS = 60_000;

/** What public.sign_in_with_nonce answers. */
type SignInResult =
  | { outcome: "signed_in"; session_id: string; user_id: string; retry_after: null }
  | { outcome: "rate_limited"; session_id: null; user_id: null; retry_after: number }
  | {
    outcome: "nonce_unknown" | "nonce_used" | "nonce_expired" | "nonce_mismatch";
    session_id: null;
    user_id: null;
    retry_after: null;
  };

const nonceRequest = z.strictObject({
  address: z.string().regex(/^0x[0-9a-fA-F]{40}$/, "must be a 0x-prefixed 20-byte hex address")
    .optional(),
  chainId: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
});
const proofRequest = z.strictObject({
  message: z.string().min(1).max(MAX_MESSAGE_LENGTH),
  // 65 bytes from a key; contract wallets' signatures (multisig, passkey, ERC-6492) run longer.
  signature: z.string().max(2 + 2 * MAX_CONTRACT_SIGNATURE_BYTES),
});
const refreshRequest = z.strictObject({ refresh_token: z.string().min(1).max(200) });
/** "local" (the default): this session; "global": every session of the creator. */
const logoutRequest = z.strictObject({ scope: z.enum(["local", "global"]).optional() });

/** The first problem, described without quoting anything the caller sent (request-issues.ts). */
function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    throw new ServiceError("invalid_request", `${describeIssue(parsed.error.issues[0])}.`);
  }
  return parsed.data;
}

export function createWalletProofHandler(context: ServiceContext): Handler {
  const { config, db, sessions, signInOrigins } = context;
  // Only characters EIP-4361 allows in a statement: a project name with others would otherwise
  // make every message this server hands out one that its own parser (and wallets) refuse.
  const statement = toStatement(
    `Sign in to ${config.projectName}. This signature proves you own this wallet; ` +
      "it authorizes no transaction and costs no gas.",
  );
  const checkContractProof = createContractProofCheck(context);

  function requireOrigins(): readonly string[] {
    if (signInOrigins.length === 0) {
      throw new ServiceError("not_configured", "Sign-in is not configured: set ALLOWED_ORIGINS.");
    }
    return signInOrigins;
  }

  async function issueNonce(request: Request): Promise<Response> {
    const origins = requireOrigins();
    const body = parseBody(nonceRequest, (await readJson(request)) ?? {});
    await enforceRateLimit(db, {
      bucket: `nonce:ip:${clientIp(request, config.clientIp)}`,
      limit: config.rateLimits.noncePerIpPerMinute,
    });
    const allowedChains = config.allowedChainIds;
    if (
      body.chainId !== undefined && allowedChains !== null && !allowedChains.includes(body.chainId)
    ) {
      throw new ServiceError("chain_not_allowed", "Sign-in from this chain is not accepted.", {
        allowedChainIds: allowedChains,
      });
    }
    // The origin the page runs on, when it is one we accept; the caller cannot widen the list.
    const requestOrigin = request.headers.get("origin");
    const origin = origins.find((o) => o === requestOrigin) ?? origins[0];
    const nonce = generateNonce();
    // Bound to the address and chain asked for: only a proof for them can spend it.
    const [row] = await db.query<{ issued_at: Date; expires_at: Date }>(
      `insert into public.auth_nonces (nonce, expires_at, address, chain_id)
         values ($1, now() + make_interval(secs => $2), $3, $4) returning issued_at, expires_at`,
      [nonce, config.nonceTtlSeconds, body.address?.toLowerCase() ?? null, body.chainId ?? null],
    );
    if (Math.random() < 0.01) {
      await db.query("delete from public.auth_nonces where expires_at < now() - interval '1 day'");
    }
    const fields = {
      domain: new URL(origin).host,
      uri: origin,
      chainId: body.chainId ?? allowedChains?.[0] ?? 1,
      nonce,
      issuedAt: row.issued_at,
      expirationTime: row.expires_at,
      statement,
    };
    return json({
      nonce,
      issuedAt: row.issued_at.toISOString(),
      expiresAt: row.expires_at.toISOString(),
      domain: fields.domain,
      uri: fields.uri,
      chainId: fields.chainId,
      version: "1",
      statement,
      ...(body.address === undefined ? {} : {
        message: buildSiweMessage({ ...fields, address: checksumAddress(body.address) }),
      }),
    });
  }

  async function exchangeProof(request: Request): Promise<Response> {
    const origins = requireOrigins();
    const body = parseBody(proofRequest, await readJson(request, MAX_PROOF_BODY_BYTES));
    // The client's attempt is counted while the message and signature are checked (CPU work),
    // not before it; a 429 still wins over whatever the checks find.
    const ipLimit = enforceRateLimit(db, {
      bucket: `proof:ip:${clientIp(request, config.clientIp)}`,
      limit: config.rateLimits.proofPerIpPerMinute,
    });
    ipLimit.catch(() => {}); // awaited below; this only marks the rejection as handled meanwhile
    // Two event-loop turns put the query on the wire before the CPU-bound checks hold the thread:
    // postgres.js queues its write in a setImmediate one microtask after the query is made.
    for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
    let fields: SiweFields;
    let byKey = true;
    try {
      fields = checkSiweMessage(body.message, {
        origins,
        chainIds: config.allowedChainIds,
        now: new Date(),
        clockSkewMs: CLOCK_SKEW_MS,
      });
      try {
        verifySignature(body.message, body.signature, fields.address);
      } catch (error) {
        if (!(error instanceof ServiceError)) throw error;
        byKey = false; // not the address's key: perhaps its contract wallet (ERC-1271/6492)
      }
    } finally {
      await ipLimit;
    }
    if (!byKey) await checkContractProof(request, fields, body.message, body.signature);

    // The rest is one database call (public.sign_in_with_nonce): the wallet's own rate limit,
    // counted only now that the signature is the wallet's (counted before, anyone could spend its
    // budget with unsigned attempts and lock its owner out); the nonce consumed by a conditional
    // update, so two concurrent proofs with one nonce get exactly one session; the wallet's user
    // created or reused; the session and its first refresh token stored.
    const walletAddress = fields.address.toLowerCase();
    const refreshToken = newRefreshToken();
    const [result] = await db.query<SignInResult>(
      "select outcome, session_id, user_id, retry_after from public.sign_in_with_nonce($1, $2, $3, $4, $5, $6, $7, $8)",
      [
        fields.nonce,
        walletAddress,
        await hashRefreshToken(refreshToken),
        config.refreshTokenTtlSeconds,
        config.rateLimits.proofPerAddressPerMinute,
        RATE_LIMIT_WINDOW_SECONDS,
        fields.chainId,
        // A key is the same creator on every chain; a contract wallet is one per chain.
        byKey ? null : fields.chainId,
      ],
    );
    switch (result.outcome) {
      case "signed_in":
        return sessionResponse(result.user_id, result.session_id, walletAddress, refreshToken);
      case "rate_limited":
        throw rateLimited(result.retry_after);
      case "nonce_unknown":
        throw new ServiceError("nonce_unknown", "This nonce was not issued here.");
      case "nonce_used":
        throw new ServiceError("nonce_used", "This nonce has already been used.");
      case "nonce_expired":
        throw new ServiceError("nonce_expired", "This nonce has expired; request a new one.");
      case "nonce_mismatch":
        throw nonceRefusal(result.outcome);
    }
  }

  async function refresh(request: Request): Promise<Response> {
    const body = parseBody(refreshRequest, await readJson(request));
    const presented = await hashRefreshToken(body.refresh_token);
    const next = newRefreshToken();
    const [rotated] = await db.query<
      { session_id: string; user_id: string; wallet_address: string }
    >(
      `with spent as (
         update public.auth_refresh_tokens t set used_at = now()
           from public.auth_sessions s
          where t.token_hash = $1 and t.used_at is null and s.id = t.session_id
            and s.revoked_at is null and s.expires_at > now()
          returning t.session_id, s.user_id
       ), fresh as (
         insert into public.auth_refresh_tokens (token_hash, session_id)
           select $2, session_id from spent
         returning session_id
       )
       select spent.session_id, spent.user_id, u.wallet_address
         from spent join fresh on true join public.wallet_users u on u.id = spent.user_id`,
      [presented, await hashRefreshToken(next)],
    );
    if (rotated !== undefined) {
      return sessionResponse(rotated.user_id, rotated.session_id, rotated.wallet_address, next);
    }
    const [known] = await db.query<{ session_id: string; used: boolean; revoked: boolean }>(
      `select t.session_id, t.used_at is not null as used,
              (s.revoked_at is not null or s.expires_at <= now()) as revoked
         from public.auth_refresh_tokens t join public.auth_sessions s on s.id = t.session_id
        where t.token_hash = $1`,
      [presented],
    );
    // Revoking below needs evidence of reuse, a spent token; anything else is just not valid.
    if (known === undefined || (!known.used && !known.revoked)) {
      throw new ServiceError("invalid_refresh_token", "This refresh token is not valid.");
    }
    if (known.revoked) {
      throw new ServiceError("session_revoked", "This session has ended; sign in again.");
    }
    // A spent token presented again means it was copied: end the whole session (theft detection).
    await db.query(
      `update public.auth_sessions set revoked_at = now(), revoked_reason = 'refresh_token_reuse'
        where id = $1 and revoked_at is null`,
      [known.session_id],
    );
    context.log.info("refresh_token_reused", { session_id: known.session_id });
    throw new ServiceError(
      "refresh_token_reused",
      "This refresh token was already used; the session is revoked.",
    );
  }

  async function logout(request: Request): Promise<Response> {
    const token = sessionBearer(request, config.publicApiKeys);
    if (token === null) {
      throw new ServiceError("missing_token", "Send Authorization: Bearer <token>.");
    }
    const session = await sessions.verify(token);
    const { scope = "local" } = parseBody(logoutRequest, (await readJson(request)) ?? {});
    // "global" (Supabase Auth's signOut scope): every live session of this creator, e.g. after
    // losing a device. Only a live session of the creator can ask, so one creator never ends
    // another's sessions.
    await db.query(
      scope === "global"
        ? `update public.auth_sessions set revoked_at = now(), revoked_reason = 'logout'
            where user_id = $1 and revoked_at is null`
        : `update public.auth_sessions set revoked_at = now(), revoked_reason = 'logout'
            where id = $1 and revoked_at is null`,
      [scope === "global" ? session.userId : session.sessionId],
    );
    return new Response(null, { status: 204 });
  }

  async function sessionResponse(
    userId: string,
    sessionId: string,
    walletAddress: string,
    refreshToken: string,
  ): Promise<Response> {
    const checksummed = checksumAddress(walletAddress);
    const { accessToken, expiresAt } = await sessions.issue({
      userId,
      sessionId,
      walletAddress: checksummed,
    });
    return json({
      access_token: accessToken,
      token_type: "bearer",
      expires_in: config.accessTokenTtlSeconds,
      expires_at: expiresAt,
      refresh_token: refreshToken,
      user: { id: userId, wallet_address: checksummed },
    });
  }

  return router(FUNCTION_NAME, [
    { method: "POST", path: "/nonce", handle: issueNonce },
    { method: "POST", path: "", handle: exchangeProof },
    { method: "POST", path: "/refresh", handle: refresh },
    { method: "POST", path: "/logout", handle: logout },
  ]);
}
