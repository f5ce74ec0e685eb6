/**
 * The vault as live-run server code sees it: reveal a creator's plaintext secrets with the
 * creator's session plus the service's live-run credential, or ask for exactly the credentials
 * one generation step needs (list the stored types, plan the route, reveal only the chosen
 * provider's types).
 *
 * It never logs, and no error it throws carries a value: messages come from the service's error
 * bodies (which never quote values) or are fixed text, and a response that cannot be parsed is
 * reported without its body. Revealed values live in RevealedSecrets, which prints and serialises
 * as type names only, so logging a result by mistake does not leak the keys in it.
 *
 * Self-contained apart from the registry and routing, so live-run code can import it anywhere
 * (an edge function, a worker, a script) with nothing but fetch.
 */
import { isLoopbackHostname } from "../../protocol/loopback.ts";
import { HEADER_SAFE_TOKEN, REVEAL_TOKEN_HEADER } from "../../protocol/reveal-header.ts";
import { planRoute, type RouteError } from "../../protocol/provider-routing.ts";
import {
  isSecretType,
  type ProviderId,
  type SecretType,
  type StepKind,
} from "../../protocol/secret-types.ts";
import { VaultError } from "./errors.ts";
import { checkedTimeout, DEFAULT_TIMEOUT_MS, requestJson } from "./service-call.ts";
import { type RevealedEntry, RevealedSecrets, StepCredentials } from "./revealed-secrets.ts";
import type { RevealedSecret } from "./types.ts";

export { REVEAL_TOKEN_HEADER };
export { VaultError } from "./errors.ts";
export type { ClientErrorCode, VaultErrorCode } from "./errors.ts";
export { RevealedSecrets, StepCredentials } from "./revealed-secrets.ts";
export {
  type CheckedSession,
  createSessionCheck,
  type SessionCheck,
  type SessionCheckOptions,
} from "./session-check.ts";

export { DEFAULT_TIMEOUT_MS };

export interface VaultServerClientOptions {
  /**
   * Where the functions are: the functions root (`http://127.0.0.1:54321/functions/v1`,
   * `https://<ref>.supabase.co/functions/v1`), which reaches user-secrets directly, or the API
   * root (`…/api`), which goes through the proxy.
   */
  readonly baseUrl: string;
  /**
   * This service's live-run credential (`wvlr_…`, from `deno task credentials:add`), or the
   * deprecated SERVER_REVEAL_TOKEN; sent as x-service-server-secret on reveals only.
   */
  readonly revealToken: string;
  /** Defaults to the global fetch. */
  readonly fetch?: typeof fetch;
  /** Per attempt, including reading the body. Default 10 s. */
  readonly timeoutMs?: number;
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
  // As the service requires of SERVER_REVEAL_TOKEN: a header cannot carry anything else.
  if (!HEADER_SAFE_TOKEN.test(options.revealToken)) {
    throw new TypeError(
      "createVaultServerClient: revealToken must be printable ASCII without spaces or line " +
        "breaks (check for a trailing newline).",
    );
  }
  const timeoutMs = checkedTimeout(options.timeoutMs, "createVaultServerClient");
  // Looked up per call, so a fetch installed after the client was made is still used.
  const fetchFn: typeof fetch = options.fetch ?? ((input, init) => fetch(input, init));

  /** One request, retried once if it never got an answer; returns the parsed JSON of a 2xx. */
  async function request(url: string, init: RequestInit): Promise<unknown> {
    try {
      return await requestJson(fetchFn, url, init, timeoutMs);
    } catch (error) {
      // Only a request that got no answer at all: a 4xx/5xx is the service's verdict, a timeout
      // means it may still be working on the first one, and a body cut short means the request
      // was handled (a reveal audited and released), so it is not made twice.
      if (!(error instanceof VaultError && error.code === "network_error")) throw error;
      return await requestJson(fetchFn, url, init, timeoutMs);
    }
  }

  async function storedTypes(sessionToken: string): Promise<SecretType[]> {
    const body = await request(secretsUrl, {
      method: "GET",
      headers: { authorization: `Bearer ${sessionToken}` },
    });
    const { secrets, providers } = (body ?? {}) as { secrets?: unknown; providers?: unknown };
    if (!Array.isArray(secrets)) throw shapeError(secretsUrl);
    // The list answers a project's public key (supabase-js's bearer without a session) with the
    // configuration alone: no session, which is not "nothing stored".
    if (providers === undefined) {
      throw new VaultError(
        "missing_token",
        "The token is not a creator's session (it is the project's public key): sign in first.",
        { status: 401 },
      );
    }
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
      const { secretType, value, updatedAt } = (entry ?? {}) as Record<
        keyof RevealedSecret,
        unknown
      >;
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
  // The reveal token travels in a header, readable on the wire over plain http: only to this host.
  if (url.protocol === "http:" && !isLoopback(url.hostname)) {
    throw new TypeError(
      "createVaultServerClient: baseUrl must be https:// (plain http:// only to a loopback host: " +
        "localhost, 127.0.0.0/8 or [::1]), so the reveal token never crosses a network in clear.",
    );
  }
  const root = `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
  return /\/api$/.test(root) ? `${root}/secrets` : `${root}/user-secrets`;
}

/**
 * A loopback host (protocol/loopback.ts) but `*.localhost`: browsers resolve those themselves,
 * while a server's resolver may ask DNS, whose spoofed answer would take the token in clear
 * elsewhere.
 */
function isLoopback(hostname: string): boolean {
  return isLoopbackHostname(hostname) && !hostname.endsWith(".localhost");
}

function routeError(error: RouteError): VaultError {
  return new VaultError(error.code, error.message, {
    details: { stepKind: error.stepKind, options: error.options },
  });
}

function shapeError(url: string): VaultError {
  return new VaultError(
    "invalid_response",
    `The vault at ${url} answered with an unexpected shape.`,
    { status: 200 },
  );
}
