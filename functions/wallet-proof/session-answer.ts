/** The answer a proof and a refresh give: a session's tokens, signed for the creator. */
import type { AppConfig } from "../_shared/config/app-config.ts";
import { checksumAddress } from "../_shared/auth/eth.ts";
import type { SessionSigner } from "../_shared/auth/session-signer.ts";
import { json } from "../_shared/http/responses.ts";
import type { SessionAnswer } from "./answers.ts";

export interface SessionAnswerDeps {
  readonly signer: SessionSigner;
  readonly config: Pick<AppConfig, "accessTokenTtlSeconds">;
}

/** The answer to a proof or a refresh: a new access token beside the given refresh token. */
export async function sessionAnswer(
  { signer, config }: SessionAnswerDeps,
  creator: { userId: string; sessionId: string; walletAddress: string },
  refreshToken: string,
): Promise<Response> {
  const checksummed = checksumAddress(creator.walletAddress);
  const { accessToken, expiresAt } = await signer.issue({
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
