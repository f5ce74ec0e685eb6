/**
 * What the user-secrets routes answer, as zod schemas: the routes type their answers by them
 * (`satisfies`, so a field added to an answer and not here fails the type check), and the OpenAPI
 * description (functions/api/openapi.ts) is generated from them. Arrays are readonly so the
 * registry's own readonly lists satisfy them.
 */
import { z } from "zod";
import { answerSchema } from "../_shared/http/answer-schema.ts";
import { described } from "../_shared/http/api-schemas.ts";
import { PROVIDER_IDS, STEP_KINDS } from "../../protocol/secret-types.ts";
import { secretTypeSchema } from "../_shared/vault/secret-type-schema.ts";

const updatedAt = () => described(z.iso.datetime(), "When the value was last saved (UTC).");

export const maskedSecret = answerSchema("MaskedSecret", "A stored secret without its value.", {
  secretType: secretTypeSchema,
  updatedAt: updatedAt(),
  hint: described(
    z.string(),
    "`…` and the value's last four characters; only for values of 16 characters or more.",
  ).optional(),
  lastUsedAt: described(
    z.iso.datetime().nullable(),
    "When a live run last released this value (since it was saved; a reveal whose decryption " +
      "failed does not count); null if never. Outlives the audit trail's retention.",
  ),
  lastUsedBy: described(
    z.string(),
    "The live-run credential's name on that last reveal (the service, as `image-worker`); absent " +
      "when never used or when that reveal named none.",
  ).optional(),
});

export const providerReadiness = answerSchema(
  "ProviderReadiness",
  "Whether a provider can be used with the stored types.",
  {
    id: z.enum(PROVIDER_IDS),
    label: z.string(),
    ready: described(z.boolean(), "Every type the provider needs is stored."),
    missing: described(
      z.array(secretTypeSchema).readonly(),
      "The types it needs that are not stored; empty when ready.",
    ),
    stepKinds: described(
      z.array(z.enum(STEP_KINDS)).readonly(),
      "The generation steps it can run.",
    ),
  },
);

/** GET (and HEAD): the configuration, and with a session the creator's masked secrets. */
export const secretsStatus = answerSchema(
  "SecretsStatus",
  "The vault's configuration, and with a session the creator's masked secrets.",
  {
    configured: described(z.boolean(), "An encryption key is configured."),
    project: z.string(),
    storage: described(z.string(), "Where values are kept, e.g. `postgres:public.user_secrets`."),
    secretTypes: described(z.array(secretTypeSchema).readonly(), "Every secret type."),
    secrets: described(
      z.array(maskedSecret).readonly(),
      "The creator's stored secrets, in `secretTypes` order; empty without a session.",
    ),
    providers: described(
      z.array(providerReadiness).readonly(),
      "With a session: each provider, ready or not.",
    ).optional(),
  },
);
export type SecretsStatus = z.infer<typeof secretsStatus>;

/** PUT. */
export const saveResult = answerSchema("SaveResult", "The secret saved.", {
  secretType: secretTypeSchema,
  updatedAt: updatedAt(),
  created: described(z.boolean(), "false when an existing value of this type was replaced."),
});
export type SaveResult = z.infer<typeof saveResult>;

/** DELETE. */
export const deleteResult = answerSchema("DeleteResult", "The secret deleted.", {
  secretType: secretTypeSchema,
  deleted: z.literal(true),
});
export type DeleteResult = z.infer<typeof deleteResult>;

export const revealedSecret = answerSchema("RevealedSecret", "A stored secret with its value.", {
  secretType: secretTypeSchema,
  value: described(z.string(), "The plaintext."),
  updatedAt: updatedAt(),
});

/** POST /reveal. */
export const revealAnswer = answerSchema(
  "RevealAnswer",
  "The creator's values: for live-run servers only.",
  {
    secrets: described(
      z.array(revealedSecret).readonly(),
      "The types asked for that are stored, in `secretTypes` order.",
    ),
  },
);
export type RevealAnswer = z.infer<typeof revealAnswer>;
