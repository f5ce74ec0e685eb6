/**
 * The local server's and the operator commands' (scripts/) one reader of the environment: the
 * development keys fill its gaps outside production, the parsers beside it read it (parseConfig
 * for the function settings, connectionLimitsFromEnv for the local server's own), and a
 * configuration error or a start-up refusal is printed and exits 1 instead of becoming a stack
 * trace.
 */
import { ConfigError } from "../functions/_shared/config/config.ts";
import { processEnv } from "../functions/_shared/config/env-schema.ts";
import { isConnectionFailure } from "../functions/_shared/db/unavailable.ts";
import { DataDirInUse } from "./data-dir.ts";
import {
  DEFAULT_DEV_KEYS_PATH,
  loadOrCreateDevKeys,
  needsDevKeys,
  withDevKeys,
} from "./dev-keys.ts";

export type Env = Record<string, string | undefined>;

export interface LocalEnv {
  readonly env: Env;
  /**
   * Which development keys filled gaps, for the start-up log, and the development live-run
   * credential they hold; null when none did.
   */
  readonly devKeys: {
    readonly path: string;
    readonly created: boolean;
    readonly liveRunCredential: string;
  } | null;
}

/**
 * The process environment, with development keys filling what it leaves unset (never in
 * production). `createDevKeys`: the server creates the key file on first start; a command only
 * reads an existing one, since keys it made up could decrypt nothing.
 */
export async function localEnv(options: { readonly createDevKeys: boolean }): Promise<LocalEnv> {
  const env: Env = { ...processEnv() };
  if (env.APP_ENV === "production" || !needsDevKeys(env)) return { env, devKeys: null };
  const path = env.DEV_KEYS_FILE || DEFAULT_DEV_KEYS_PATH;
  if (!options.createDevKeys && !(await exists(path))) return { env, devKeys: null };
  const { keys, created } = await loadOrCreateDevKeys(path);
  return {
    env: withDevKeys(env, keys),
    devKeys: { path, created, liveRunCredential: keys.SERVER_REVEAL_TOKEN },
  };
}

/**
 * Runs a settings parser; a configuration error (ConfigError from config.ts, RangeError from the
 * connection limits) is printed, without a stack, and the process exits 1.
 */
export function parseOrExit<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (!(error instanceof ConfigError) && !(error instanceof RangeError)) throw error;
    console.error(error.message);
    Deno.exit(1);
  }
}

/**
 * The one line a start-up step's refusal is worth, or null for any other error (which keeps its
 * stack): another process holds the embedded database, or the database cannot be reached (named
 * by its error code, never by its URL, which may hold a password).
 */
export function startupRefusal(error: unknown): string | null {
  if (error instanceof DataDirInUse) return error.message;
  if (!isConnectionFailure(error)) return null;
  const { code, name } = error as { code?: string; name?: string };
  return `the database cannot be reached: ${code ?? name}`;
}

/** Runs a start-up step; a refusal startupRefusal names is printed in one line and exits 1. */
export async function stepOrExit<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    const refusal = startupRefusal(error);
    if (refusal === null) throw error;
    console.error(refusal);
    Deno.exit(1);
  }
}

export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}
