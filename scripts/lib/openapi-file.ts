/**
 * docs/openapi.json: the description the api function serves at GET /api/openapi.json
 * (functions/api/openapi.ts), as committed. `deno task openapi` writes it; a test fails when it
 * drifts from the code.
 */
import { API_ROUTES } from "../../functions/api/handler.ts";
import { openApiDocument } from "../../functions/api/openapi.ts";

export const OPENAPI_FILE = new URL("../../docs/openapi.json", import.meta.url);

/** The file's text: the document, two-space indented (which `deno fmt` leaves as it is). */
export function openApiText(): string {
  return `${JSON.stringify(openApiDocument(API_ROUTES), null, 2)}\n`;
}
