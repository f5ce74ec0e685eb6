/** Bounded request bodies: bytes counted as they arrive, and JSON. */
import { ServiceError } from "./errors.ts";
import { hasDuplicateKey } from "./json-keys.ts";

export const MAX_BODY_BYTES = 16 * 1024;
/** The wallet proof's body: a contract wallet's signature alone may be 16 KB (32 KB of hex). */
export const MAX_PROOF_BODY_BYTES = 48 * 1024;

/**
 * Reads a body of at most `maxBytes`, counting bytes as they arrive so an oversized or endless
 * body is cut off without being buffered.
 */
export async function readBody(
  request: Request,
  maxBytes = MAX_BODY_BYTES,
): Promise<Uint8Array<ArrayBuffer>> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > maxBytes) throw tooLarge(maxBytes);
  if (request.body === null) return new Uint8Array(0);

  const chunks: Uint8Array<ArrayBuffer>[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    let chunk: ReadableStreamReadResult<Uint8Array<ArrayBuffer>>;
    try {
      chunk = await reader.read();
    } catch {
      // The client went away mid-body, or its framing was broken: its fault, not ours (no 500).
      throw new ServiceError("invalid_request", "The request body could not be read in full.");
    }
    const { done, value } = chunk;
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge(maxBytes);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0];
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/** Reads a bounded JSON body. Returns undefined for an empty body (the caller decides if that is ok). */
export async function readJson(request: Request, maxBytes = MAX_BODY_BYTES): Promise<unknown> {
  const bytes = await readBody(request, maxBytes);
  if (bytes.byteLength === 0) return undefined;
  const mediaType = request.headers.get("content-type")?.split(";")[0].trim().toLowerCase();
  if (mediaType !== "application/json") {
    throw new ServiceError(
      "unsupported_media_type",
      "Send the body as Content-Type: application/json.",
    );
  }
  let text: string;
  let body: unknown;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    body = JSON.parse(text);
  } catch {
    throw new ServiceError("invalid_json", "The body is not valid UTF-8 JSON.");
  }
  // Not named: the key is the client's text (no error echoes it).
  if (hasDuplicateKey(text)) {
    throw new ServiceError("invalid_json", "The body names the same key twice in one object.");
  }
  return body;
}

/**
 * readJson for a route whose body may be left out: no body reads as `{}`. JSON `null` is a body,
 * and the route refuses it like any other that is not an object.
 */
export async function readOptionalJson(request: Request): Promise<unknown> {
  const body = await readJson(request);
  return body === undefined ? {} : body;
}

function tooLarge(maxBytes: number) {
  return new ServiceError("payload_too_large", `The body must be at most ${maxBytes} bytes.`, {
    maxBytes,
  });
}
