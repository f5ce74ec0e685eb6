/**
 * The description is the contract: every answer a test gets from the handlers is checked against
 * docs/openapi.json, the operation for its method and path, and that operation's response for
 * its status: the status must be described, a described body must match its JSON Schema (JSON
 * Schema 2020-12, OpenAPI 3.1's dialect; ajv), a response without one must have no body, and
 * required headers must be there. A path the description does not have must be its 404, a method a
 * path does not take its 405, an OPTIONS its preflight. Paths outside /api and /functions/v1 (the
 * settings page, its assets) are not the API's and are not checked.
 *
 * A violation throws where the answer is received and is kept, so a test that swallowed the throw
 * (or a server that turned it into a 500) still fails when its app closes.
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020";
import addFormats from "ajv-formats";
import type { LocalApp } from "../../server/app.ts";

type Json = Record<string, unknown>;

const DOCUMENT_FILE = new URL("../../docs/openapi.json", import.meta.url);
const DOCUMENT_ID = "openapi.json";

interface Described {
  readonly document: {
    readonly paths: Record<string, Record<string, Json>>;
    readonly components: Record<string, Record<string, Json>>;
  };
  readonly ajv: Ajv2020;
  readonly validators: Map<string, ValidateFunction>;
}

let loaded: Described | undefined;

/** The committed document and its validator, read on first use (bench imports edge.ts too). */
function described(): Described {
  if (loaded !== undefined) return loaded;
  const document = JSON.parse(Deno.readTextFileSync(DOCUMENT_FILE));
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  // A CommonJS module: its default import is module.exports, whose `default` is the plugin.
  addFormats.default(ajv);
  // The whole document as one schema resource, so its $refs resolve as they do in the document.
  ajv.addSchema(document, DOCUMENT_ID);
  loaded = { document, ajv, validators: new Map() };
  return loaded;
}

/** A JSON pointer's segment: `/api/secrets` → `~1api~1secrets`. */
const segment = (key: string) => key.replaceAll("~", "~0").replaceAll("/", "~1");

function validatorAt(pointer: string): ValidateFunction {
  const { ajv, validators } = described();
  let validate = validators.get(pointer);
  if (validate === undefined) {
    validate = ajv.getSchema(`${DOCUMENT_ID}#${pointer}`);
    if (validate === undefined) throw new Error(`docs/openapi.json has no schema at ${pointer}`);
    validators.set(pointer, validate);
  }
  return validate;
}

/** What is wrong with `value` by the schema at `pointer` in the document, or null. */
export function schemaProblems(pointer: string, value: unknown): string | null {
  const validate = validatorAt(pointer);
  return validate(value) ? null : described().ajv.errorsText(validate.errors, { dataVar: "value" });
}

/** The value at a JSON pointer into the document. */
function at(pointer: string): Json {
  let value: unknown = described().document;
  for (const key of pointer.slice(1).split("/")) {
    value = (value as Json)[key.replaceAll("~1", "/").replaceAll("~0", "~")];
  }
  return value as Json;
}

/** Where a `{ $ref: "#/…" }` at `pointer` points, or `pointer` itself. */
function target(pointer: string): string {
  const ref = at(pointer).$ref;
  return typeof ref === "string" ? ref.slice(1) : pointer;
}

/** The keys of a path item that are operations (it has others, such as `servers`). */
const OPERATION_METHODS = new Set(["get", "put", "post", "delete", "options", "head", "patch"]);

/** What the check needs of one exchange. */
export interface Exchange {
  readonly method: string;
  readonly url: string;
  readonly status: number;
  readonly headers: Headers;
  /** The body as received ("" for none). */
  readonly body: string;
}

/**
 * The described path an answer belongs to, or null for one that is not the API's. `functionName`:
 * the handler is that function's own, which Supabase hands `/<name>/…` as well.
 */
export function describedPath(pathname: string, functionName?: string): string | null {
  const match = /^\/functions\/v1\/([^/]+)(\/.*)?$/.exec(pathname) ??
    /^\/(api)(\/.*)?$/.exec(pathname) ??
    (functionName === undefined ? null : new RegExp(`^/(${functionName})(/.*)?$`).exec(pathname));
  if (match === null) return null;
  const [, name, below = ""] = match;
  // The routers read a path without its trailing slashes (router.ts subpath).
  const rest = below.replace(/\/+$/, "");
  return name === "api" ? `/api${rest}` : `/functions/v1/${name}${rest}`;
}

/** What is wrong with `exchange` by the description, or null when nothing is. */
export function contractViolation(exchange: Exchange, functionName?: string): string | null {
  const pathname = new URL(exchange.url).pathname;
  const path = describedPath(pathname, functionName);
  if (path === null) return null;
  const method = exchange.method.toLowerCase();
  const name = `${exchange.method} ${pathname} → ${exchange.status}`;
  const problems = (() => {
    if (method === "options") return answerProblems(exchange, OFF_PATH.preflight, false);
    const item = described().document.paths[path];
    // A HEAD answer's body is the server's to drop: only its status and headers are checked.
    const readBody = method !== "head";
    if (item === undefined) return answerProblems(exchange, OFF_PATH.notFound, readBody);
    if (!OPERATION_METHODS.has(method) || item[method] === undefined) {
      return answerProblems(exchange, OFF_PATH.methodNotAllowed, readBody);
    }
    const status = String(exchange.status);
    const responses = item[method].responses as Json;
    if (!(status in responses)) {
      return [`the status is not described for ${method.toUpperCase()} ${path}`];
    }
    const pointer = `/paths/${segment(path)}/${method}/responses/${status}`;
    return responseProblems(exchange, pointer, exchange.status, readBody);
  })();
  return problems.length === 0
    ? null
    : `docs/openapi.json does not describe ${name}: ${problems.join("; ")}\n${
      exchange.body.slice(0, 500)
    }`;
}

/**
 * What the document's prose says of answers no operation describes (an OpenAPI path cannot stand
 * for "any other path"): their status, required headers and the error body's schema.
 */
interface OffPathAnswer {
  readonly status: number;
  readonly requiredHeaders: readonly string[];
  /** The body's schema (a component), or null for no body. */
  readonly schema: string | null;
}

const OFF_PATH = {
  preflight: { status: 204, requiredHeaders: [], schema: null },
  notFound: { status: 404, requiredHeaders: [], schema: "/components/schemas/NotFoundError" },
  methodNotAllowed: {
    status: 405,
    requiredHeaders: ["Allow"],
    schema: "/components/schemas/MethodNotAllowedError",
  },
} as const satisfies Record<string, OffPathAnswer>;

function answerProblems(exchange: Exchange, answer: OffPathAnswer, readBody: boolean): string[] {
  if (exchange.status !== answer.status) return [`expected ${answer.status} there`];
  const problems = answer.requiredHeaders.filter((header) => !exchange.headers.has(header))
    .map((header) => `no ${header} header`);
  if (!readBody) return problems;
  if (answer.schema === null) {
    if (exchange.body !== "") problems.push("a body where none is described");
    return problems;
  }
  return [...problems, ...bodyProblems(exchange, answer.schema)];
}

function responseProblems(
  exchange: Exchange,
  pointer: string,
  status: number,
  readBody: boolean,
): string[] {
  if (exchange.status !== status) return [`expected ${status} there`];
  const base = target(pointer);
  const response = at(base);
  const problems: string[] = [];
  for (const [header, object] of Object.entries((response.headers ?? {}) as Json)) {
    const ref = (object as Json).$ref;
    const { required } = typeof ref === "string"
      ? { ...at(ref.slice(1)), ...object as Json }
      : object as Json;
    if (required === true && !exchange.headers.has(header)) problems.push(`no ${header} header`);
  }
  if (!readBody) return problems;
  if (response.content === undefined) {
    if (exchange.body !== "") problems.push("a body where none is described");
    return problems;
  }
  return [...problems, ...bodyProblems(exchange, `${base}/content/application~1json/schema`)];
}

/** What is wrong with the exchange's JSON body by the schema at `schemaPointer`. */
function bodyProblems(exchange: Exchange, schemaPointer: string): string[] {
  const mediaType = exchange.headers.get("content-type")?.split(";")[0].trim();
  if (mediaType !== "application/json") {
    return [`content-type ${mediaType ?? "none"}, not application/json`];
  }
  let body: unknown;
  try {
    body = JSON.parse(exchange.body);
  } catch {
    return ["a body that is not JSON"];
  }
  const validate = validatorAt(schemaPointer);
  if (validate(body)) return [];
  // An error's code first: a code the status does not list fails every branch of its anyOf.
  const code = (body as { error?: { code?: unknown } } | null)?.error?.code;
  const which = typeof code === "string" ? `error code ${code}: ` : "";
  return [which + described().ajv.errorsText(validate.errors, { dataVar: "body" })];
}

/** Reads `response` (a clone) and checks the exchange; throws the violation, if any. */
export async function checkAnswer(
  request: { readonly method: string; readonly url: string },
  response: Response,
  functionName?: string,
): Promise<void> {
  const violation = await violationOf(request, response, functionName);
  if (violation !== null) throw new Error(violation);
}

async function violationOf(
  request: { readonly method: string; readonly url: string },
  response: Response,
  functionName?: string,
): Promise<string | null> {
  if (describedPath(new URL(request.url).pathname, functionName) === null) return null;
  const body = request.method === "HEAD" ? "" : await response.clone().text();
  return contractViolation({
    method: request.method,
    url: request.url,
    status: response.status,
    headers: response.headers,
    body,
  }, functionName);
}

/** A local app whose answers are checked, and the violations seen so far. */
export interface CheckedApp {
  readonly app: LocalApp;
  readonly violations: readonly string[];
}

/**
 * `app` with its handler and each function's checked: a violation is recorded, then thrown where
 * the answer was awaited. The app's own routing (the proxy calling a function) is left as it is.
 */
export function checkedApp(app: LocalApp): CheckedApp {
  const violations: string[] = [];
  const checked = <H extends (request: Request, ...rest: never[]) => Promise<Response>>(
    handler: H,
    functionName?: string,
  ): H =>
    (async (request: Request, ...rest: never[]) => {
      const { method, url } = request;
      const response = await handler(request, ...rest);
      const violation = await violationOf({ method, url }, response, functionName);
      if (violation !== null) {
        violations.push(violation);
        throw new Error(violation);
      }
      return response;
    }) as H;
  const functions = Object.fromEntries(
    Object.entries(app.functions).map(([name, handler]) => [name, checked(handler, name)]),
  );
  return { app: { handler: checked(app.handler), functions }, violations };
}

/** Throws the violations `app` recorded, if any (for a test's close). */
export function assertContractKept(app: CheckedApp): void {
  if (app.violations.length > 0) {
    throw new Error(
      `${app.violations.length} answer(s) broke docs/openapi.json:\n${app.violations.join("\n")}`,
    );
  }
}
