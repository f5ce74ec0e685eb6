/** What two or more wallet-proof routes share: the origins sign-in accepts, the session answer. */
import type { AppConfig } from "../_shared/config/config.ts";
import { checksumAddress } from "../_shared/auth/eth.ts";
import type { SessionTokens } from "../_shared/auth/session-tokens.ts";
import { ServiceError } from "../_shared/http/errors.ts";
import { json } from "../_shared/http/responses.ts";
import type { SessionAnswer } from "./answers.ts";

/** The origins a sign-in message may name (nonce, proof); none configured refuses sign-in. */
export function requireOrigins(signInOrigins: readonly string[]): readonly string[] {
  if (signInOrigins.length === 0) {
    throw new ServiceError("not_configured", "Sign-in is not configured: set ALLOWED_ORIGINS.");
  }
  return signInOrigins;
}

export interface SessionAnswerDeps {
  readonly sessions: SessionTokens;
  readonly config: Pick<AppConfig, "accessTokenTtlSeconds">;
}

/** The answer to a proof or a refresh: a new access token beside the given refresh token. */
export async function sessionAnswer(
  { sessions, config }: SessionAnswerDeps,
  creator: { userId: string; sessionId: string; walletAddress: string },
  refreshToken: string,
): Promise<Response> {
  const checksummed = checksumAddress(creator.walletAddress);
  const { accessToken, expiresAt } = await sessions.issue({
    userId: creator.userId,
    sessionId: creator.sessionId,
    walletAddress: checksummed,
  });
  const answer: SessionAnswer = {
    access_token: accessToken,
    token_type: "bearer",
    expires_in: config.accessTokenTtlSeconds,
    expires_at: expiresAt,
    refresh_token: refreshToken,
    user: { id: creator.userId, wallet_address: checksummed },
  };
  return json(answer);
}
