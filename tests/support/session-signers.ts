/**
 * Session tokens made outside a sign-in, for tests that need one the service would refuse: the
 * service's own key at another time (expired), or a stranger's key under the service's kid.
 */
import type { AppConfig } from "../../functions/_shared/config/app-config.ts";
import {
  createSessionSigner,
  type SessionSigner,
} from "../../functions/_shared/auth/session-signer.ts";
import { parseSigningKeys } from "../../functions/_shared/auth/session-keys.ts";
import { generateDevSigningKey } from "../../server/dev-keys.ts";

/** The service's own signer, its clock `now` and its tokens' life `ttl` seconds. */
export function serviceSigner(
  config: AppConfig,
  options: { readonly now?: () => number; readonly ttl?: number } = {},
): SessionSigner {
  return createSessionSigner({
    keys: config.sessionKeys,
    accessTokenTtlSeconds: options.ttl ?? config.accessTokenTtlSeconds,
    now: options.now,
  });
}

/** A signer of another key that names the service's signing kid: a forger's. */
export function strangerSigner(config: AppConfig): SessionSigner {
  const { signing } = config.sessionKeys;
  const kid = signing.alg === "HS256" ? undefined : signing.kid;
  const stranger = parseSigningKeys(JSON.stringify({ ...generateDevSigningKey(), kid }), [])!;
  return createSessionSigner({
    keys: { ...config.sessionKeys, signing: stranger.signing },
    accessTokenTtlSeconds: config.accessTokenTtlSeconds,
  });
}
