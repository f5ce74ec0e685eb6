/**
 * Every deployed function's name (its folder under functions/), the proxy last, for the harnesses
 * that start or deploy each one. supabase/config.toml, which cannot import, names them again.
 */
import { FUNCTION_NAME as API } from "../../functions/api/handler.ts";
import { FUNCTION_NAME as USER_SECRETS } from "../../functions/user-secrets/handler.ts";
import { FUNCTION_NAME as WALLET_PROOF } from "../../functions/wallet-proof/handler.ts";

export const FUNCTION_NAMES = [WALLET_PROOF, USER_SECRETS, API] as const;
