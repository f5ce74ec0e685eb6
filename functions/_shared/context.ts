/**
 * Everything a function needs, built once per process from configuration: handlers receive this
 * explicitly instead of reaching for globals, so tests build the same thing in-process.
 */
import type { AppConfig } from "./config/app-config.ts";
import type { ContractSignatureVerifier } from "./chain/contract-signature-verifier.ts";
import type { Database } from "./db/db.ts";
import type { Logger } from "./http/log.ts";
import { createSessionTokens, type SessionTokens } from "./auth/session-tokens.ts";
import { createKeyring, type Keyring } from "./vault/vault-crypto.ts";

export interface ServiceContext {
  readonly config: AppConfig;
  readonly db: Database;
  readonly log: Logger;
  readonly sessions: SessionTokens;
  /** The vault's keys from config.encryptionKeys, imported once per process. */
  readonly keyring: Keyring;
  /**
   * Origins whose EIP-4361 domain and uri sign-in accepts: ALLOWED_ORIGINS, or when that is empty
   * the server's own origins (the local server passes its URL). Never derived from request headers,
   * which a caller controls.
   */
  readonly signInOrigins: readonly string[];
  /**
   * Asks contract wallets (ERC-1271, ERC-6492) on their chains. Absent: wallet-proof builds one
   * from CHAIN_RPC_URLS (only there, so the other functions' bundles do not carry it).
   */
  readonly chainVerifier?: ContractSignatureVerifier;
}

export interface ContextOptions {
  readonly ownOrigins?: readonly string[];
  readonly chainVerifier?: ContractSignatureVerifier;
}

export function createServiceContext(
  config: AppConfig,
  db: Database,
  log: Logger,
  options: ContextOptions = {},
): ServiceContext {
  // Public keys only: signing is wallet-proof's alone (session-signer.ts).
  const sessions = createSessionTokens({
    issuer: config.sessionKeys.issuer,
    publicKeys: config.sessionKeys.published,
    legacySecret: config.sessionKeys.legacySecret,
    db,
  });
  const signInOrigins = config.allowedOrigins.length > 0
    ? config.allowedOrigins
    : options.ownOrigins ?? [];
  const keyring = createKeyring(config.encryptionKeys);
  return {
    config,
    db,
    log,
    sessions,
    keyring,
    signInOrigins,
    ...(options.chainVerifier === undefined ? {} : { chainVerifier: options.chainVerifier }),
  };
}
