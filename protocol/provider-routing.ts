/**
 * Which provider a generation step goes to, given the secret types a creator has stored, and which
 * providers are ready at all. Pure functions over the registry in secret-types.ts: the routing
 * table, the default order and the keys each provider needs are all read from there, so a new
 * provider or type changes routing without touching this file.
 *
 * Only names of secret types pass through here, never values.
 */
import {
  isSecretType,
  PROVIDER_IDS,
  type ProviderId,
  type ProviderInfo,
  PROVIDERS,
  type SecretType,
  STEP_KINDS,
  type StepKind,
} from "./secret-types.ts";

/**
 * The default preference: the registry's provider order (A, B, C, D, E, F). For each step kind the
 * candidates are the providers serving it, in this order: image A, B, C, D; video A, B; llm E, F;
 * multimodal F.
 */
export const DEFAULT_PROVIDER_ORDER: readonly ProviderId[] = PROVIDER_IDS;

/** The routing table: step kind → the providers that can run it, in the default order. */
export const ROUTES: Readonly<Record<StepKind, readonly ProviderId[]>> = {
  image: providersFor("image"),
  video: providersFor("video"),
  llm: providersFor("llm"),
  multimodal: providersFor("multimodal"),
};

function providersFor(kind: StepKind): ProviderId[] {
  return PROVIDER_IDS.filter((id) => PROVIDERS[id].stepKinds.includes(kind));
}

export interface RoutePlan {
  readonly ok: true;
  readonly stepKind: StepKind;
  readonly provider: ProviderId;
  /** Exactly the types the provider needs: what a live run should reveal, and nothing more. */
  readonly secretTypes: readonly SecretType[];
}

/** One way a step could be enabled, and what of it the creator still lacks. */
export interface RouteOption {
  readonly provider: ProviderId;
  readonly requires: readonly SecretType[];
  readonly missing: readonly SecretType[];
}

export type RouteErrorCode = "no_provider_for_step" | "unknown_step_kind" | "unknown_provider";

export interface RouteError {
  readonly ok: false;
  readonly code: RouteErrorCode;
  /** Says which keys would enable the step (for no_provider_for_step); names only, never values. */
  readonly message: string;
  readonly stepKind: string;
  /** The providers that could run the step, in the order they were tried. */
  readonly options: readonly RouteOption[];
}

export type RouteResult = RoutePlan | RouteError;

export function isStepKind(value: unknown): value is StepKind {
  return typeof value === "string" && (STEP_KINDS as readonly string[]).includes(value);
}

export function isProviderId(value: unknown): value is ProviderId {
  return typeof value === "string" && Object.hasOwn(PROVIDERS, value);
}

/**
 * The order to try providers in: the preference first (duplicates ignored), then every provider it
 * does not name, in the default order. A preference can thus reorder but never disable a provider,
 * so a creator whose preferred provider lacks a key still runs on another. To combine a recipe's
 * preference with the creator's, pass `[...recipeOrder, ...creatorOrder]`: the recipe wins.
 */
function providerOrder(preference: readonly string[] = []): ProviderId[] {
  const order: ProviderId[] = [];
  for (const id of [...preference, ...DEFAULT_PROVIDER_ORDER]) {
    if (isProviderId(id) && !order.includes(id)) order.push(id);
  }
  return order;
}

/**
 * Picks the first provider, in preference order, that serves `stepKind` and has every type it
 * requires among `availableSecretTypes` (names the vault lists; unknown names are ignored).
 * Preference and step kind may come from recipe files, so bad values are errors, not exceptions.
 */
export function planRoute(
  stepKind: string,
  availableSecretTypes: Iterable<string>,
  preference: readonly string[] = [],
): RouteResult {
  if (!isStepKind(stepKind)) {
    return {
      ok: false,
      code: "unknown_step_kind",
      message: `Unknown step kind ${quoted(stepKind)}; step kinds are ${STEP_KINDS.join(", ")}.`,
      stepKind,
      options: [],
    };
  }
  // A recipe's "providers": "provider_b" (a string, not a list) must not be read letter by letter.
  if (!Array.isArray(preference)) {
    return {
      ok: false,
      code: "unknown_provider",
      message: `The preference must be a list of providers (${PROVIDER_IDS.join(", ")}), not ` +
        `${quoted(preference)}.`,
      stepKind,
      options: [],
    };
  }
  const unknown = preference.filter((id) => !isProviderId(id));
  if (unknown.length > 0) {
    return {
      ok: false,
      code: "unknown_provider",
      message: `Unknown provider ${unknown.map(quoted).join(", ")} in the ` +
        `preference; providers are ${PROVIDER_IDS.join(", ")}.`,
      stepKind,
      options: [],
    };
  }

  const available = new Set([...availableSecretTypes].filter(isSecretType));
  const options = providerOrder(preference)
    .filter((id) => PROVIDERS[id].stepKinds.includes(stepKind))
    .map((provider): RouteOption => ({
      provider,
      requires: PROVIDERS[provider].requires,
      missing: PROVIDERS[provider].requires.filter((type) => !available.has(type)),
    }));
  const chosen = options.find((option) => option.missing.length === 0);
  if (chosen) {
    return { ok: true, stepKind, provider: chosen.provider, secretTypes: chosen.requires };
  }
  return {
    ok: false,
    code: "no_provider_for_step",
    message: missingKeysMessage(stepKind, options),
    stepKind,
    options,
  };
}

/**
 * "video steps need provider_a_api_key + provider_a_org_id, or provider_b_key.", followed by what a
 * half-configured provider still lacks, so the creator knows the one key that would do.
 */
function missingKeysMessage(stepKind: StepKind, options: readonly RouteOption[]): string {
  const ways = options.map((option) => option.requires.join(" + ")).join(", or ");
  const partial = options
    .filter((option) => option.missing.length < option.requires.length)
    .map((option) =>
      ` ${PROVIDERS[option.provider].label} is missing ${option.missing.join(" + ")}.`
    )
    .join("");
  return `${stepKind} steps need ${ways}.${partial}`;
}

/** A provider's label and step kinds, as the registry has them, and whether it is usable yet. */
export interface ProviderReadiness extends Pick<ProviderInfo, "label" | "stepKinds"> {
  readonly id: ProviderId;
  readonly ready: boolean;
  /** Types the provider needs that are not stored; empty when ready. */
  readonly missing: readonly SecretType[];
}

/** For each provider, in the registry's order: ready or not, and which types are missing. */
export function providerReadiness(storedTypes: Iterable<string>): ProviderReadiness[] {
  const stored = new Set([...storedTypes].filter(isSecretType));
  return PROVIDER_IDS.map((id) => {
    const missing = PROVIDERS[id].requires.filter((type) => !stored.has(type));
    return {
      id,
      label: PROVIDERS[id].label,
      ready: missing.length === 0,
      missing,
      stepKinds: PROVIDERS[id].stepKinds,
    };
  });
}

/** A recipe's value for a message: a string quoted, anything else only by its kind. */
function quoted(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  return value === null ? "null" : `a ${typeof value}`;
}
