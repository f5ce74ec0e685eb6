/**
 * Where the api function serves its OpenAPI description (openapi.ts), below its own name. Exported
 * apart from its value: the Supabase CLI's deploy takes a quoted path after `export` for a file to
 * upload.
 */
const OPENAPI_PATH = "/openapi.json";
export { OPENAPI_PATH };
