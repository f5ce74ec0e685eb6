/**
 * A fresh signature for a sensitive act: unlocking live-run access, signing sessions out, deleting
 * the account. A stolen session alone cannot do them; the wallet must sign again. The signed-in
 * creator asks for a nonce for one purpose (confirm-nonce.ts), signs an EIP-4361 message whose
 * statement says what it authorizes, and sends it with the act. Checked here as sign-in checks a
 * proof (origins, chain, clock, the key's signature or the contract wallet's on its chain, through
 * the same contract-proof check and its RPC budgets), plus: the statement is the purpose's own
 * and the address is the session's. The nonce is spent by the act's own database call, in the
 * transaction that does the act, and only if it was issued for that purpose to that session: a
 * sign-in nonce, or one for another act, cannot serve.
 */
import { z } from "zod";
import type { AppConfig } from "../_shared/config/app-config.ts";
import { budget, type PrefixBudget, prefixBudget } from "../_shared/config/limits.ts";
import type { Database } from "../_shared/db/db.ts";
import { clientIp, enforceRateLimit } from "../_shared/auth/rate-limit.ts";
import { requireSessionLive, type TokenIdentity } from "../_shared/auth/session-tokens.ts";
import { checkSiweMessage, toStatement, verifySignature } from "../_shared/auth/siwe.ts";
import { MAX_MESSAGE_LENGTH } from "../_shared/auth/siwe-parser.ts";
import { MAX_CONTRACT_SIGNATURE_BYTES } from "../_shared/chain/contract-signatures.ts";
import { MAX_PROOF_BODY_BYTES, readJson } from "../_shared/http/bodies.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import { acceptsLoopbackOrigins, signInOriginsFor } from "../_shared/http/local-origins.ts";
import { parseRequest } from "../_shared/http/request-issues.ts";
import type { ContractProofCheck } from "./contract-proof.ts";
import { requireOrigins } from "./message-to-sign.ts";

/** The acts that need a fresh signature, as `purpose` names them. */
export const CONFIRM_PURPOSES = ["unlock", "sign_out_sessions", "delete_account"] as const;
export type ConfirmPurpose = typeof CONFIRM_PURPOSES[number];

const CLOCK_SKEW_MS = 60_000;

/**
 * Each purpose's statement, fixed: what the wallet shows is what the signature authorizes, and a
 * message for one act is refused by the others (only EIP-4361's statement characters are kept).
 */
export function confirmStatements(projectName: string): Readonly<Record<ConfirmPurpose, string>> {
  const noGas = "It authorizes no transaction and costs no gas.";
  return {
    unlock: toStatement(
      `Unlock live-run access to the keys in your ${projectName} vault. ${noGas}`,
    ),
    sign_out_sessions: toStatement(
      `Sign out the ${projectName} sessions you chose. ${noGas}`,
    ),
    delete_account: toStatement(
      `Delete your ${projectName} account: every saved key, every session and this wallet's ` +
        `link to it. This cannot be undone. ${noGas}`,
    ),
  };
}

/** The signed message and its signature, as every act that needs a fresh signature takes them. */
export const freshSignatureFields = {
  message: z.string().min(1).max(MAX_MESSAGE_LENGTH),
  // 65 bytes from a key; a contract wallet's (multisig, passkey, ERC-6492) runs longer.
  signature: z.string().max(2 + 2 * MAX_CONTRACT_SIGNATURE_BYTES),
};

/** POST /unlock and DELETE /account: the fresh signature alone. */
export const freshSignatureRequest = z.strictObject(freshSignatureFields);

/** Who signed, as the act's database call spends the nonce for. */
export interface FreshSigner {
  readonly nonce: string;
  /** Lowercase, as stored. */
  readonly walletAddress: string;
  readonly messageChainId: number;
  /** Null: the key signed (a key is the same creator on every chain); else the contract's chain. */
  readonly identityChainId: number | null;
  /** The message's EIP-4361 resources (none: empty), which the signature covers. */
  readonly resources: readonly string[];
}

/**
 * An act confirmed by `signer`, counted against the creator's budget of confirmations
 * (`perMinute`, per wallet as sign-in's proofs are).
 */
export interface SignedAction {
  readonly session: TokenIdentity;
  readonly signer: FreshSigner;
  /** The creator's budget of acts, whose bucket the act's function completes with the creator. */
  readonly creator: PrefixBudget;
}

export interface FreshSignatureDeps {
  readonly db: Database;
  readonly config: Pick<
    AppConfig,
    "appEnv" | "clientIp" | "rateLimits" | "allowedChainIds" | "projectName"
  >;
  readonly signInOrigins: readonly string[];
  readonly checkContractProof: ContractProofCheck;
}

export type FreshSignatureCheck = (
  request: Request,
  session: TokenIdentity,
  purpose: ConfirmPurpose,
  body: { readonly message: string; readonly signature: string },
) => Promise<FreshSigner>;

/** Checks everything but the nonce, which the act spends (creator-controls-store.ts). */
export function createFreshSignatureCheck(deps: FreshSignatureDeps): FreshSignatureCheck {
  const { db, config, signInOrigins, checkContractProof } = deps;
  const acceptLoopback = acceptsLoopbackOrigins(config.appEnv);
  const statements = confirmStatements(config.projectName);

  return async (request, session, purpose, body) => {
    const origins = requireOrigins(signInOriginsFor(signInOrigins, request, acceptLoopback));
    // Every attempt counts against the client's proof budget, as a sign-in's does.
    await enforceRateLimit(
      db,
      budget(
        config.rateLimits,
        "proofPerIpPerMinute",
        "client",
        clientIp(request, config.clientIp),
      ),
    );
    const fields = checkSiweMessage(body.message, {
      origins,
      chainIds: config.allowedChainIds,
      now: new Date(),
      clockSkewMs: CLOCK_SKEW_MS,
    });
    if (fields.statement !== statements[purpose]) {
      throw new ServiceError(
        "purpose_mismatch",
        "The message does not authorize this act: sign the message that came with a nonce " +
          "for it.",
      );
    }
    const walletAddress = fields.address.toLowerCase();
    if (walletAddress !== session.walletAddress.toLowerCase()) {
      throw new ServiceError(
        "signature_mismatch",
        "The message names another wallet than the signed-in creator's.",
      );
    }
    let byKey = true;
    try {
      verifySignature(body.message, body.signature, fields.address);
    } catch (error) {
      if (!(error instanceof ServiceError)) throw error;
      byKey = false;
    }
    // Not the key's: perhaps the creator's contract wallet, asked on its chain like a sign-in. The
    // check spends the wallet's RPC budgets, so an ended session is refused before it (the act's
    // own statement checks the session for a key's signature, which spends nothing before).
    if (!byKey) {
      await requireSessionLive(db, session);
      await checkContractProof(request, fields, body.message, body.signature);
    }
    return {
      nonce: fields.nonce,
      walletAddress,
      messageChainId: fields.chainId,
      identityChainId: byKey ? null : fields.chainId,
      resources: fields.resources ?? [],
    };
  };
}

/** What an act's route needs: the database and its budgets, and the fresh signature's check. */
export interface SignedActionDeps {
  readonly db: Database;
  readonly config: Pick<AppConfig, "rateLimits">;
  readonly checkFreshSignature: FreshSignatureCheck;
}

/**
 * An act's request read by `schema` (at most MAX_PROOF_BODY_BYTES: a contract wallet's signature
 * runs long) and its signature checked: the body, and the act for creator-controls-store.ts to spend,
 * counted against the wallet's budget of proofs.
 */
export async function readSignedAction<
  T extends { readonly message: string; readonly signature: string },
>(
  { config, checkFreshSignature }: SignedActionDeps,
  request: Request,
  session: TokenIdentity,
  purpose: ConfirmPurpose,
  schema: z.ZodType<T>,
): Promise<{ readonly action: SignedAction; readonly body: T }> {
  const body = parseRequest(schema, await readJson(request, MAX_PROOF_BODY_BYTES));
  const signer = await checkFreshSignature(request, session, purpose, body);
  const creator = prefixBudget(config.rateLimits, "proofPerAddressPerMinute", "creator");
  return { body, action: { session, signer, creator } };
}
