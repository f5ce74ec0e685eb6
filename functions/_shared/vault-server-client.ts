/**
 * The vault as live-run server code sees it: reveal a creator's plaintext secrets with the
 * creator's session plus the server reveal token, or ask for exactly the credentials one generation
 * step needs (list the stored types, plan the route, reveal only the chosen provider's types).
 *
 * It never logs, and no error it throws carries a value: messages come from the service's error
 * bodies (which never quote values) or are fixed text, and a response that cannot be parsed is
 * reported without its body. Revealed values live in RevealedSecrets, which prints and serialises
 * as type names only, so logging a result by mistake does not leak the keys in it.
 *
 * Self-contained apart from the registry and routing, so live-run code can import it anywhere
 * (an edge function, a worker, a script) with nothing but fetch.
 */
import type { ErrorCode } from "./errors.ts";
import { planRoute, type RouteError, type RouteErrorCode } from "./provider-routing.ts";
import { isSecretType, type ProviderId, type SecretType, type StepKind } from "./secret-types.ts";

/** The header that carries the server reveal token (spec part 5, rule 6). */
export const REVEAL_TOKEN_HEADER = "x-service-server-secret";

export const DEFAULT_TIMEOUT_MS = 10_000;

export interface VaultServerClientOptions {
  /**
   * Where the functions are: the functions root (`http://127.0.0.1:54321/functions/v1`,
   * `https://<ref>.supabase.co/functions/v1`), which reaches user-secrets directly, or the API
   * root (`…/api`), which goes through the proxy.
   */
  readonly baseUrl: string;
  /** SERVER_REVEAL_TOKEN, sent as x-service-server-secret on reveals only. */
  readonly revealToken: string;
  /** Defaults to the global fetch. */
  readonly fetch?: typeof fetch;
  /** Per attempt, including reading the body. Default 10 s. */
  readonly timeoutMs?: number;
}

/** Errors of the client itself, next to the service's own codes. */
export type ClientErrorCode =
  /** The request never got an answer (refused, reset, DNS…), even after the one retry. */
  | "network_error"
  /** No complete answer within timeoutMs; not retried, the service may just be slow. */
  | "timeout"
  /** An answer that is not the service's JSON (a proxy's HTML page, a truncated body…). */
  | "invalid_response"
  /** A 3xx answer: never followed, since following would carry the reveal token elsewhere. */
  | "redirect_refused"
  /** RevealedSecrets.get() of a type the reveal did not return. */
  | "secret_not_revealed"
  /** From planRoute: no stored key enables the step, or an unknown step kind/provider. */
  | RouteErrorCode;

export type VaultClientErrorCode = ErrorCode | ClientErrorCode;

export class VaultClientError extends Error {
  constructor(
    /** The service's error code (`reveal_forbidden`, `token_expired`, …) or the client's own. */
    readonly code: VaultClientErrorCode,
    message: string,
    /** The HTTP status, or null when there was no answer (network, timeout, routing). */
    readonly status: number | null,
    /** Extra non-secret fields: the service's (e.g. allowedSecretTypes) or the route options. */
    readonly details: Readonly<Record<string, unknown>> = {},
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = "VaultClientError";
  }
}

interface RevealedEntry {
  readonly value: string;
  readonly updatedAt: string;
}

const REDACTED = "[redacted]";

/**
 * Revealed values, readable by type. Printing it (console.log, Deno.inspect, util.inspect) or
 * JSON.stringify shows the types only.
 */
export class RevealedSecrets {
  readonly #entries: ReadonlyMap<SecretType, RevealedEntry>;

  constructor(entries: ReadonlyMap<SecretType, RevealedEntry>) {
    this.#entries = entries;
  }

  /** The types revealed, in the spec's order. */
  get secretTypes(): SecretType[] {
    return [...this.#entries.keys()];
  }

  has(type: SecretType): boolean {
    return this.#entries.has(type);
  }

  /** The plaintext value. Throws secret_not_revealed for a type the reveal did not return. */
  get(type: SecretType): string {
    const entry = this.#entries.get(type);
    if (entry === undefined) {
      throw new VaultClientError(
        "secret_not_revealed",
        `${type} was not revealed (not stored, or not asked for).`,
        null,
        { secretType: type },
      );
    }
    return entry.value;
  }

  /** When the creator last saved this type (ISO 8601 UTC). */
  updatedAt(type: SecretType): string | undefined {
    return this.#entries.get(type)?.updatedAt;
  }

  toJSON(): Record<string, unknown> {
    return { secretTypes: this.secretTypes, values: REDACTED };
  }

  toString(): string {
    return `RevealedSecrets(${this.secretTypes.join(", ")}; values ${REDACTED})`;
  }

  [Symbol.for("Deno.customInspect")](): string {
    return this.toString();
  }

  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return this.toString();
  }
}

/** The credentials one step needs: exactly its provider's types, all present. */
export class StepCredentials extends RevealedSecrets {
  constructor(
    readonly stepKind: StepKind,
    readonly provider: ProviderId,
    entries: ReadonlyMap<SecretType, RevealedEntry>,
  ) {
    super(entries);
  }

  override toJSON(): Record<string, unknown> {
    return { stepKind: this.stepKind, provider: this.provider, ...super.toJSON() };
  }

  override toString(): string {
    return `StepCredentials(${this.stepKind} via ${this.provider}: ${
      this.secretTypes.join(", ")
    }; values ${REDACTED})`;
  }
}

export interface VaultServerClient {
  /** The names of the types the creator has stored (GET with the session; no values). */
  storedTypes(sessionToken: string): Promise<SecretType[]>;
  /** Plaintext of the given types (every stored type when omitted); types not stored are absent. */
  reveal(sessionToken: string, secretTypes?: readonly SecretType[]): Promise<RevealedSecrets>;
  /**
   * The credentials for one step: lists the stored types, plans the route (preference first, then
   * the default order) and reveals only the chosen provider's types. Throws no_provider_for_step,
   * whose message names the keys that would enable the step, when none is ready.
   */
  credentialsForStep(
    sessionToken: string,
    stepKind: StepKind,
    preference?: readonly ProviderId[],
  ): Promise<StepCredentials>;
}

export function createVaultServerClient(options: VaultServerClientOptions): VaultServerClient {
  const secretsUrl = secretsUrlOf(options.baseUrl);
  const revealUrl = `${secretsUrl}/reveal`;
  if (typeof options.revealToken !== "string" || options.revealToken.length === 0) {
    throw new TypeError("createVaultServerClient: revealToken is required.");
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new TypeError("createVaultServerClient: timeoutMs must be a positive number.");
  }
  // Looked up per call, so a fetch installed after the client was made is still used.
  const fetchFn: typeof fetch = options.fetch ?? ((input, init) => fetch(input, init));

  /** One request, retried once if it never got an answer; returns the parsed JSON of a 2xx. */
  async function request(url: string, init: RequestInit): Promise<unknown> {
    try {
      return await attempt(url, init);
    } catch (error) {
      // Only a request that got no answer at all: a 4xx/5xx is the service's verdict, and a
      // timeout means it may still be working on the first one.
      if (!(error instanceof VaultClientError && error.code === "network_error")) throw error;
      return await attempt(url, init);
    }
  }

  async function attempt(url: string, init: RequestInit): Promise<unknown> {
    const signal = AbortSignal.timeout(timeoutMs);
    let response: Response;
    try {
      // Never followed: fetch would resend x-service-server-secret to whatever origin the
      // Location names (only Authorization is dropped across origins).
      response = await fetchFn(url, { ...init, redirect: "manual", signal });
    } catch (error) {
      throw failure(error, signal, url);
    }
    if (response.type === "opaqueredirect" || (response.status >= 300 && response.status < 400)) {
      await response.body?.cancel().catch(() => {});
      throw redirectRefused(url, response);
    }
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      throw failure(error, signal, url);
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      // JSON.parse's message quotes the text around the fault, which may be a revealed value.
      body = undefined;
    }
    if (response.ok && body !== undefined) return body;
    const error = (body as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
    if (!response.ok && typeof error?.code === "string") {
      const { code, message, ...details } = error;
      throw new VaultClientError(
        code as VaultClientErrorCode,
        typeof message === "string" ? message : code,
        response.status,
        details,
      );
    }
    throw new VaultClientError(
      "invalid_response",
      `The vault at ${url} answered ${response.status} without the service's JSON body.`,
      response.status,
    );
  }

  function failure(error: unknown, signal: AbortSignal, url: string): VaultClientError {
    if (signal.aborted) {
      return new VaultClientError(
        "timeout",
        `The vault at ${url} did not answer within ${timeoutMs} ms.`,
        null,
      );
    }
    // The cause is the runtime's own error: it names the URL and the failure, never headers.
    return new VaultClientError(
      "network_error",
      `The vault at ${url} could not be reached.`,
      null,
      {},
      { cause: error },
    );
  }

  async function storedTypes(sessionToken: string): Promise<SecretType[]> {
    const body = await request(secretsUrl, {
      method: "GET",
      headers: { authorization: `Bearer ${sessionToken}` },
    });
    const secrets = (body as { secrets?: unknown } | null)?.secrets;
    if (!Array.isArray(secrets)) throw shapeError(secretsUrl);
    const types: SecretType[] = [];
    for (const entry of secrets) {
      const type = (entry as { secretType?: unknown } | null)?.secretType;
      if (typeof type !== "string") throw shapeError(secretsUrl);
      // A type this copy of the registry does not know cannot be routed; leave it out.
      if (isSecretType(type)) types.push(type);
    }
    return types;
  }

  async function reveal(
    sessionToken: string,
    secretTypes?: readonly SecretType[],
  ): Promise<RevealedSecrets> {
    return new RevealedSecrets(await revealEntries(sessionToken, secretTypes));
  }

  async function revealEntries(
    sessionToken: string,
    secretTypes?: readonly SecretType[],
  ): Promise<Map<SecretType, RevealedEntry>> {
    const body = await request(revealUrl, {
      method: "POST",
      headers: {
        authorization: `Bearer ${sessionToken}`,
        [REVEAL_TOKEN_HEADER]: options.revealToken,
        "content-type": "application/json",
      },
      body: JSON.stringify(secretTypes === undefined ? {} : { secretTypes }),
    });
    const secrets = (body as { secrets?: unknown } | null)?.secrets;
    if (!Array.isArray(secrets)) throw shapeError(revealUrl);
    const entries = new Map<SecretType, RevealedEntry>();
    for (const entry of secrets) {
      const { secretType, value, updatedAt } = (entry ?? {}) as Record<string, unknown>;
      if (
        typeof secretType !== "string" || typeof value !== "string" ||
        typeof updatedAt !== "string"
      ) {
        throw shapeError(revealUrl);
      }
      if (isSecretType(secretType)) entries.set(secretType, { value, updatedAt });
    }
    return entries;
  }

  async function credentialsForStep(
    sessionToken: string,
    stepKind: StepKind,
    preference: readonly ProviderId[] = [],
  ): Promise<StepCredentials> {
    // A bad step kind or provider (say, from a recipe file) fails before anything is asked.
    const checked = planRoute(stepKind, [], preference);
    if (!checked.ok && checked.code !== "no_provider_for_step") throw routeError(checked);
    const available = new Set(await storedTypes(sessionToken));
    // Each pass either returns or removes a type from `available`, so this ends. A second pass
    // happens only if the creator deleted a key between the list and the reveal.
    for (;;) {
      const plan = planRoute(stepKind, available, preference);
      if (!plan.ok) throw routeError(plan);
      const entries = await revealEntries(sessionToken, plan.secretTypes);
      const gone = plan.secretTypes.filter((type) => !entries.has(type));
      if (gone.length === 0) return new StepCredentials(plan.stepKind, plan.provider, entries);
      for (const type of gone) available.delete(type);
    }
  }

  return { storedTypes, reveal, credentialsForStep };
}

/** `<functions root>/user-secrets` or `<api root>/secrets`. */
function secretsUrlOf(baseUrl: string): string {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new TypeError("createVaultServerClient: baseUrl must be an absolute URL.");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError("createVaultServerClient: baseUrl must be http(s).");
  }
  const root = `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
  return /\/api$/.test(root) ? `${root}/secrets` : `${root}/user-secrets`;
}

function redirectRefused(url: string, response: Response): VaultClientError {
  // An opaque redirect (browsers) hides its status and Location; Deno shows both.
  const location = response.headers.get("location");
  const status = response.type === "opaqueredirect" ? null : response.status;
  return new VaultClientError(
    "redirect_refused",
    `The vault at ${url} answered ${status ?? "a redirect"} to ${
      location ?? "an undisclosed location"
    }; redirects are not followed. Point baseUrl at the final address.`,
    status,
    location === null ? {} : { location },
  );
}

function routeError(error: RouteError): VaultClientError {
  return new VaultClientError(error.code, error.message, null, {
    stepKind: error.stepKind,
    options: error.options,
  });
}

function shapeError(url: string): VaultClientError {
  return new VaultClientError(
    "invalid_response",
    `The vault at ${url} answered with an unexpected shape.`,
    200,
  );
}
