/**
 * Entrypoint glue for a deployed function: configuration from the environment, a database, the
 * handler. Misconfiguration fails closed: every request gets 500 not_configured and the log names
 * the missing settings (never their values).
 */
import { ConfigError, parseConfig } from "./config.ts";
import { createServiceContext, type ServiceContext } from "./context.ts";
import { openDatabase } from "./db.ts";
import { ServiceError } from "./errors.ts";
import { errorResponse, type Handler, serve } from "./http.ts";
import { consoleLogger } from "./log.ts";

export async function bootFunction(create: (context: ServiceContext) => Handler): Promise<Handler> {
  try {
    const config = parseConfig(Deno.env.toObject());
    const db = await openDatabase(config.database);
    const context = createServiceContext(config, db, consoleLogger);
    return serve(create(context), { allowedOrigins: config.allowedOrigins }, consoleLogger);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    const refusal = new ServiceError("not_configured", "The service is not configured.");
    return () => Promise.resolve(errorResponse(refusal));
  }
}
