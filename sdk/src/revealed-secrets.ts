/**
 * Revealed values as the live-run client returns them: readable by type, and printed or serialised
 * as type names only, so logging a result by mistake does not leak the keys in it.
 */
import type { ProviderId, SecretType, StepKind } from "../../protocol/secret-types.ts";
import { VaultError } from "./errors.ts";
import type { RevealedSecret } from "./types.ts";

export type RevealedEntry = Omit<RevealedSecret, "secretType">;

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

  /** The types revealed, in the registry's order. */
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
      throw new VaultError(
        "secret_not_revealed",
        `${type} was not revealed (not stored, or not asked for).`,
        { details: { secretType: type } },
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
// Explicit fields, not parameter properties: erasable TypeScript (`erasableSyntaxOnly`).
export class StepCredentials extends RevealedSecrets {
  readonly stepKind: StepKind;
  readonly provider: ProviderId;

  constructor(
    stepKind: StepKind,
    provider: ProviderId,
    entries: ReadonlyMap<SecretType, RevealedEntry>,
  ) {
    super(entries);
    this.stepKind = stepKind;
    this.provider = provider;
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
