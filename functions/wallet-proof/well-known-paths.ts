/** Where the JWKS and the discovery document are served, below the function's name. */

// Built, not written whole: the Supabase CLI takes a quoted "/….json" for a file to upload.
const WELL_KNOWN = "/.well-known";
export const JWKS_PATH = `${WELL_KNOWN}/jwks.json`;
export const DISCOVERY_PATH = `${WELL_KNOWN}/openid-configuration`;
