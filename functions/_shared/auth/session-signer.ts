/**
 * Signing session tokens: the one module that imports a private key, loaded by wallet-proof's
 * routes alone (the api proxy hosts them; user-secrets verifies with session-tokens.ts and public
 * keys). The header names the
 * key's `kid`; the claims are the ones Supabase's APIs check (iss, aud, role, exp), the others
 * every Supabase session carries (iat, sub, session_id, aal, is_anonymous), and the wallet.
 */
import { AUDIENCE, importAlgorithm, loadJose, type SessionIdentity } from "./session-tokens.ts";
import type { SessionKeys } from "./session-keys.ts";

export interface SessionSigner {
  issue(identity: SessionIdentity): Promise<{ accessToken: string; expiresAt: number }>;
}

export interface SessionSignerOptions {
  readonly keys: SessionKeys;
  readonly accessTokenTtlSeconds: number;
  readonly now?: () => number;
}

export function createSessionSigner(options: SessionSignerOptions): SessionSigner {
  const { signing, issuer } = options.keys;
  // Imported once, on the first sign-in: never at start, so a process that only answers nonces
  // or the JWKS never holds it as a CryptoKey.
  let keyPromise: Promise<CryptoKey> | undefined;
  const signingKey = () =>
    keyPromise ??= signing.alg === "HS256"
      ? crypto.subtle.importKey(
        "raw",
        new TextEncoder().encode(signing.secret),
        { name: "HMAC", hash: "SHA-256" },
        false,
        ["sign"],
      )
      : crypto.subtle.importKey("jwk", signing.jwk, importAlgorithm(signing.alg), false, ["sign"]);
  const header = signing.alg === "HS256"
    ? { alg: "HS256", typ: "JWT" }
    : { alg: signing.alg, kid: signing.kid, typ: "JWT" };
  const nowSeconds = () => Math.floor((options.now?.() ?? Date.now()) / 1000);

  return {
    async issue(identity) {
      const issuedAt = nowSeconds();
      const expiresAt = issuedAt + options.accessTokenTtlSeconds;
      const { SignJWT } = await loadJose();
      const accessToken = await new SignJWT({
        role: AUDIENCE,
        // Claims every Supabase Auth session carries, so Supabase's clients read ours as theirs.
        aal: "aal1",
        is_anonymous: false,
        session_id: identity.sessionId,
        wallet_address: identity.walletAddress,
      })
        .setProtectedHeader(header)
        .setSubject(identity.userId)
        .setAudience(AUDIENCE)
        .setIssuer(issuer)
        .setIssuedAt(issuedAt)
        .setExpirationTime(expiresAt)
        .sign(await signingKey());
      return { accessToken, expiresAt };
    },
  };
}
