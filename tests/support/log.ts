/** A logger that keeps nothing, for tests that do not read the service's log lines. */
import type { Logger } from "../../functions/_shared/http/log.ts";

export const silentLogger: Logger = { info: () => {}, error: () => {} };
