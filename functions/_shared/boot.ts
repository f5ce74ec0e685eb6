/**
 * Entrypoint glue for a deployed function: configuration from the environment, a Postgres pool, the
 * handler. Misconfiguration fails closed: every request gets 500 not_configured and the log names
 * the missing settings (never their values). APP_ENV left unset means production here.
 */
import { ConfigError, FUNCTION_DEFAULTS, parseConfig } from "./config/config.ts";
import { processEnv } from "./config/env-schema.ts";
import { createServiceContext, type ServiceContext } from "./context.ts";
import { openPostgres } from "./db/postgres.ts";
import { ServiceError } from "./http/errors.ts";
import { errorResponse } from "./http/responses.ts";
import { type Handler } from "./http/router.ts";
import { corsPolicy, serve } from "./http/serve.ts";
import { consoleLogger } from "./http/log.ts";

export function bootFunction(create: (context: ServiceContext) => Handler): Handler {
  try {
    const config = parseConfig(processEnv(), FUNCTION_DEFAULTS);
    // A function has no embedded database: that belongs to the local server alone.
    if (config.database.engine !== "postgres") {
      throw new ConfigError(["a function needs SUPABASE_DB_URL (or DATABASE_URL)"]);
    }
    const db = openPostgres(config.database);
    const context = createServiceContext(config, db, consoleLogger);
    return serve(create(context), corsPolicy(config), consoleLogger);
  } catch (error) {
    // A ConfigError names the settings; anything else (a database URL option the driver refuses,
    // say) is named by its kind alone, since a driver's message may quote the URL.
    console.error(
      error instanceof ConfigError
        ? error.message
        : `the function could not start: ${errorKind(error)} while opening the database or context`,
    );
    const refusal = new ServiceError("not_configured", "The service is not configured.");
    return () => Promise.resolve(errorResponse(refusal));
  }
}

function errorKind(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}
