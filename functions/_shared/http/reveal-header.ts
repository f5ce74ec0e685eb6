// The reveal header's facts live in protocol/reveal-header.ts. This path stays only while
// config/env-schema.ts, being rewritten by the limits work (issue 44, item 2), still imports it:
// once that lands, point its import at protocol/ and delete this file.
export { HEADER_SAFE_TOKEN } from "../../../protocol/reveal-header.ts";
