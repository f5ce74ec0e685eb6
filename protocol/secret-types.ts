/**
 * The single source of the vault's secret types. The database constraint, the zod
 * enums, `GET /api/secrets`'s `secretTypes`, provider routing and the docs all derive from here;
 * a test proves the migration's CHECK constraint lists exactly these values.
 */

export type StepKind = "image" | "video" | "llm" | "multimodal";

export const STEP_KINDS: readonly StepKind[] = ["image", "video", "llm", "multimodal"];

export type ProviderId =
  | "provider_a"
  | "provider_b"
  | "provider_c"
  | "provider_d"
  | "provider_e"
  | "provider_f";

export interface SecretTypeInfo {
  readonly provider: ProviderId;
  readonly purpose: string;
}

/** In this order: the order of `secretTypes` and of the masked `secrets` list. */
export const SECRET_TYPE_INFO = {
  provider_a_api_key: {
    provider: "provider_a",
    purpose:
      "API key of provider A. Required to route image and video generation steps to provider A.",
  },
  provider_a_org_id: {
    provider: "provider_a",
    purpose:
      "Organization ID at provider A. Required together with provider_a_api_key, for billing attribution on provider A runs.",
  },
  provider_b_key: {
    provider: "provider_b",
    purpose:
      "API key of provider B. Enables routing of image and video generation steps to provider B.",
  },
  provider_c_key: {
    provider: "provider_c",
    purpose: "API key of provider C. Enables routing of image generation steps to provider C.",
  },
  provider_d_key: {
    provider: "provider_d",
    purpose: "API key of provider D. Enables routing of image generation steps to provider D.",
  },
  provider_e_key: {
    provider: "provider_e",
    purpose: "API key of provider E. Used for LLM steps routed through provider E.",
  },
  provider_f_api_key: {
    provider: "provider_f",
    purpose:
      "API key of provider F, a gateway proxy. Used when routing LLM and multimodal steps through that gateway.",
  },
} as const satisfies Record<string, SecretTypeInfo>;

export type SecretType = keyof typeof SECRET_TYPE_INFO;

export const SECRET_TYPES = Object.keys(SECRET_TYPE_INFO) as [SecretType, ...SecretType[]];

export interface ProviderInfo {
  readonly label: string;
  /** Every one of these types must be stored for the provider to be usable. */
  readonly requires: readonly SecretType[];
  readonly stepKinds: readonly StepKind[];
}

export const PROVIDERS: Readonly<Record<ProviderId, ProviderInfo>> = {
  provider_a: {
    label: "Provider A",
    requires: ["provider_a_api_key", "provider_a_org_id"],
    stepKinds: ["image", "video"],
  },
  provider_b: { label: "Provider B", requires: ["provider_b_key"], stepKinds: ["image", "video"] },
  provider_c: { label: "Provider C", requires: ["provider_c_key"], stepKinds: ["image"] },
  provider_d: { label: "Provider D", requires: ["provider_d_key"], stepKinds: ["image"] },
  provider_e: { label: "Provider E", requires: ["provider_e_key"], stepKinds: ["llm"] },
  provider_f: {
    label: "Provider F (gateway)",
    requires: ["provider_f_api_key"],
    stepKinds: ["llm", "multimodal"],
  },
};

export const PROVIDER_IDS = Object.keys(PROVIDERS) as ProviderId[];

export function isSecretType(value: unknown): value is SecretType {
  return typeof value === "string" && Object.hasOwn(SECRET_TYPE_INFO, value);
}
