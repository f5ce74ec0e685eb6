/**
 * A live-run server's local check of a creator's session, before it calls reveal: the token's
 * signature against the keys wallet-proof publishes (its /.well-known/jwks.json), its algorithm
 * pinned to the key's own, its expiry, audience and role. Public keys only, WebCrypto only (no
 * dependency). The JWKS is cached; a kid the cache lacks is fetched again at most once per
 * `minRefetchSeconds`, so a stream of forged kids cannot turn into a stream of fetches. Whether
 * the session was signed out is still the vault's answer on reveal.
 */
import { isLoopbackHostname } from "../../protocol/loopback.ts";
import { VaultError } from "./errors.ts";

export interface SessionCheckOptions {
  /**
   * wallet-proof's JWKS: `https://<ref>.supabase.co/functions/v1/wallet-proof/.well-known/jwks.json`
   * (or the project's Auth JWKS when the key is imported there).
   */
  readonly jwksUrl: string;
  /** The `iss` tokens must carry (the discovery document's `issuer`); unchecked when omitted. */
  readonly issuer?: string;
  /** How long fetched keys are used before they are fetched again. Default 300 s. */
  readonly cacheSeconds?: number;
  /** The least time between two fetches for an unknown kid. Default 30 s. */
  readonly minRefetchSeconds?: number;
  /** Defaults to the global fetch. */
  readonly fetch?: typeof fetch;
  /** Milliseconds since the epoch; defaults to Date.now. */
  readonly now?: () => number;
}

/** What a valid token says of its creator. */
export interface CheckedSession {
  readonly userId: string;
  readonly sessionId: string;
  readonly walletAddress: string;
  /** Seconds since the epoch. */
  readonly expiresAt: number;
}

export type SessionCheck = (token: string) => Promise<CheckedSession>;

type Alg = "ES256" | "RS256";
interface Key {
  readonly alg: Alg;
  readonly key: Promise<CryptoKey>;
}

const ALGORITHMS: Record<
  Alg,
  { import: EcKeyImportParams | RsaHashedImportParams; verify: AlgorithmIdentifier | EcdsaParams }
> = {
  ES256: {
    import: { name: "ECDSA", namedCurve: "P-256" },
    verify: { name: "ECDSA", hash: "SHA-256" },
  },
  RS256: {
    import: { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" },
    verify: { name: "RSASSA-PKCS1-v1_5" },
  },
};

/** Header members that carry or point to a key of the token's own choosing: never honoured. */
const KEY_CARRYING_HEADERS = ["jwk", "jku", "x5u", "x5c", "x5t", "x5t#S256", "crit"];

const invalid = () =>
  new VaultError("invalid_token", "The session token is not valid.", { status: 401 });

// atob, not Uint8Array.fromBase64: the package runs on Node.js 20 and browsers that lack the latter,
// and a token's parts are a few hundred bytes.
function base64UrlBytes(text: string): Uint8Array<ArrayBuffer> {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw invalid();
  let binary: string;
  try {
    binary = atob(text.replaceAll("-", "+").replaceAll("_", "/"));
  } catch {
    throw invalid();
  }
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

function jsonPart(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(
      new TextDecoder("utf-8", { fatal: true }).decode(base64UrlBytes(text)),
    );
    if (typeof value === "object" && value !== null && !Array.isArray(value)) return value;
  } catch (error) {
    if (error instanceof VaultError) throw error;
  }
  throw invalid();
}

export function createSessionCheck(options: SessionCheckOptions): SessionCheck {
  let url: URL;
  try {
    url = new URL(options.jwksUrl);
  } catch {
    throw new TypeError("createSessionCheck: jwksUrl must be an absolute URL.");
  }
  // Keys fetched in clear could be swapped on the way: https, or plain http to this host only.
  if (
    url.protocol !== "https:" &&
    !(url.protocol === "http:" && isLoopbackHostname(url.hostname) &&
      !url.hostname.endsWith(".localhost"))
  ) {
    throw new TypeError("createSessionCheck: jwksUrl must be https:// (http:// only to loopback).");
  }
  const cacheMs = (options.cacheSeconds ?? 300) * 1000;
  const minRefetchMs = (options.minRefetchSeconds ?? 30) * 1000;
  const now = options.now ?? Date.now;
  const fetchFn: typeof fetch = options.fetch ?? ((input, init) => fetch(input, init));

  let keys = new Map<string, Key>();
  let fetchedAt = -Infinity;
  let fetching: Promise<void> | null = null;

  async function load(): Promise<void> {
    let response: Response;
    try {
      // A redirect is refused: keys from wherever a Location points are not the service's.
      response = await fetchFn(url.href, { redirect: "error" });
    } catch {
      throw new VaultError("network_error", `The keys at ${url.href} could not be reached.`);
    }
    if (!response.ok) {
      throw new VaultError("invalid_response", `The keys at ${url.href} could not be fetched.`, {
        status: response.status,
      });
    }
    const body = await response.json().catch(() => null) as { keys?: unknown } | null;
    if (!Array.isArray(body?.keys)) {
      throw new VaultError("invalid_response", `The keys at ${url.href} are not a JWKS.`);
    }
    const next = new Map<string, Key>();
    for (const entry of body.keys as Record<string, unknown>[]) {
      const { kid, alg, kty, crv, x, y, n, e } = entry ?? {};
      // Only public keys of the two algorithms, each pinned to its own; anything else is skipped.
      if (typeof kid !== "string" || (alg !== "ES256" && alg !== "RS256")) continue;
      const jwk: JsonWebKey | null = alg === "ES256" && kty === "EC" && crv === "P-256"
        ? { kty, crv, x: x as string, y: y as string }
        : alg === "RS256" && kty === "RSA"
        ? { kty, n: n as string, e: e as string }
        : null;
      if (jwk === null) continue;
      const key = crypto.subtle.importKey("jwk", jwk, ALGORITHMS[alg].import, false, ["verify"]);
      key.catch(() => {}); // a key that fails to import fails the tokens that name it
      next.set(kid, { alg, key });
    }
    keys = next;
    fetchedAt = now();
  }

  function refresh(): Promise<void> {
    return fetching ??= load().finally(() => {
      fetching = null;
    });
  }

  async function keyFor(kid: string): Promise<Key | undefined> {
    const age = now() - fetchedAt;
    if (age >= cacheMs) await refresh();
    else if (!keys.has(kid) && age >= minRefetchMs) await refresh();
    return keys.get(kid);
  }

  return async function checkSession(token: string): Promise<CheckedSession> {
    if (typeof token !== "string") throw invalid();
    const parts = token.split(".");
    if (parts.length !== 3) throw invalid();
    const header = jsonPart(parts[0]);
    if (KEY_CARRYING_HEADERS.some((member) => member in header)) throw invalid();
    if (typeof header.kid !== "string") throw invalid();
    const key = await keyFor(header.kid);
    // "none", HS256 or any algorithm but the named key's own is refused before any math.
    if (key === undefined || header.alg !== key.alg) throw invalid();
    const signature = base64UrlBytes(parts[2]);
    if (key.alg === "ES256" && signature.length !== 64) throw invalid();
    const valid = await crypto.subtle.verify(
      ALGORITHMS[key.alg].verify,
      await key.key.catch(() => {
        throw invalid();
      }),
      signature,
      new TextEncoder().encode(`${parts[0]}.${parts[1]}`),
    );
    if (!valid) throw invalid();
    const claims = jsonPart(parts[1]);
    const { sub, session_id: sessionId, wallet_address: walletAddress, exp, aud, role, iss } =
      claims;
    if (typeof exp !== "number") throw invalid();
    if (exp <= Math.floor(now() / 1000)) {
      throw new VaultError("token_expired", "The session token has expired; refresh it.", {
        status: 401,
      });
    }
    const audiences = Array.isArray(aud) ? aud : [aud];
    if (
      !audiences.includes("authenticated") || role !== "authenticated" ||
      (options.issuer !== undefined && iss !== options.issuer) ||
      typeof sub !== "string" || typeof sessionId !== "string" ||
      typeof walletAddress !== "string"
    ) {
      throw invalid();
    }
    return { userId: sub, sessionId, walletAddress, expiresAt: exp };
  };
}
