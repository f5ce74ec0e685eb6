/// <reference lib="dom" />
/**
 * The settings page's markup for the keys and the provider readiness, built with createElement,
 * textContent and attributes only, never from markup strings, and the sentences it shows for an
 * address or an error. No state: settings.ts passes in what to show and what to do on save and
 * delete.
 */
import {
  type MaskedSecret,
  type ProviderId,
  type ProviderReadiness,
  type SecretsStatus,
  type SecretType,
  type StepKind,
  VaultError,
} from "../sdk/src/browser.ts";

/** The body of /settings/registry.json (server/static.ts). */
export interface Registry {
  readonly secretTypes: ReadonlyArray<
    { readonly secretType: SecretType; readonly provider: string; readonly purpose: string }
  >;
  readonly providers: ReadonlyArray<{
    readonly id: ProviderId;
    readonly label: string;
    readonly requires: readonly SecretType[];
    readonly stepKinds: readonly StepKind[];
  }>;
  readonly stepKinds: readonly StepKind[];
}

export interface SecretItemActions {
  save(secretType: SecretType, input: HTMLInputElement, button: HTMLButtonElement): Promise<void>;
  remove(secretType: SecretType, button: HTMLButtonElement): Promise<void>;
}

export interface ReadinessElements {
  readonly readiness: HTMLElement;
  readonly stepList: HTMLUListElement;
  readonly providerRows: HTMLTableSectionElement;
}

export function secretItem(
  secretType: SecretType,
  purpose: string,
  actions: SecretItemActions,
): HTMLLIElement {
  const item = document.createElement("li");
  item.className = "secret";
  item.dataset.secretType = secretType;

  const head = document.createElement("div");
  head.className = "secret-head";
  const title = document.createElement("h3");
  title.id = `title-${secretType}`;
  const code = document.createElement("code");
  code.textContent = secretType;
  title.append(code);
  const badge = document.createElement("span");
  badge.className = "badge";
  head.append(title, badge);

  const purposeText = document.createElement("p");
  purposeText.className = "purpose";
  purposeText.id = `purpose-${secretType}`;
  purposeText.textContent = purpose;

  const meta = document.createElement("p");
  meta.className = "meta";
  meta.id = `meta-${secretType}`;

  const form = document.createElement("form");
  form.className = "secret-form";
  form.noValidate = true;
  const label = document.createElement("label");
  label.htmlFor = `value-${secretType}`;
  label.textContent = `New value for ${secretType}`;
  const row = document.createElement("div");
  row.className = "row";
  const input = document.createElement("input");
  input.type = "password";
  input.id = `value-${secretType}`;
  input.name = "value";
  input.autocomplete = "off";
  input.spellcheck = false;
  input.setAttribute("autocapitalize", "off");
  input.setAttribute("aria-describedby", `purpose-${secretType} meta-${secretType}`);
  const save = document.createElement("button");
  save.type = "submit";
  save.className = "primary";
  save.setAttribute("aria-describedby", `title-${secretType}`);
  const remove = document.createElement("button");
  remove.type = "button";
  remove.className = "danger";
  remove.textContent = "Delete";
  remove.setAttribute("aria-label", `Delete ${secretType}`);
  row.append(input, save, remove);
  form.append(label, row);

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void actions.save(secretType, input, save);
  });
  remove.addEventListener("click", () => void actions.remove(secretType, remove));

  item.append(head, purposeText, meta, form);
  return item;
}

/** Shows, per listed type, whether it is saved and when; the forms only with a session. */
export function renderSecretItems(list: HTMLOListElement, status: SecretsStatus | null): void {
  const saved = new Map<SecretType, MaskedSecret>(
    (status?.secrets ?? []).map((secret) => [secret.secretType, secret]),
  );
  const signedIn = status !== null;
  for (const item of list.querySelectorAll<HTMLLIElement>("li.secret")) {
    const secretType = item.dataset.secretType as SecretType;
    const secret = saved.get(secretType);
    const badge = item.querySelector<HTMLElement>(".badge")!;
    const meta = item.querySelector<HTMLElement>(".meta")!;
    const form = item.querySelector<HTMLFormElement>("form")!;
    const save = form.querySelector<HTMLButtonElement>('button[type="submit"]')!;
    const remove = form.querySelector<HTMLButtonElement>("button.danger")!;

    item.dataset.saved = String(secret !== undefined);
    badge.hidden = !signedIn;
    badge.textContent = secret ? "Saved" : "Not saved";
    form.hidden = !signedIn;
    save.textContent = secret ? "Replace" : "Save";
    save.setAttribute("aria-label", `${secret ? "Replace" : "Save"} ${secretType}`);
    remove.hidden = secret === undefined;

    meta.replaceChildren();
    meta.hidden = secret === undefined;
    if (secret) {
      const time = timeElement(secret.updatedAt);
      meta.append("Last updated ", time);
      const lastUsed = document.createElement("span");
      lastUsed.className = "last-used";
      if (secret.lastUsedAt === null) lastUsed.textContent = "never used by a live run";
      else {
        lastUsed.append(
          `last used by ${secret.lastUsedBy ?? "a live run"} `,
          timeElement(secret.lastUsedAt),
        );
      }
      meta.append(" · ", lastUsed);
      if (secret.hint) {
        const hint = document.createElement("span");
        hint.className = "key-hint";
        hint.textContent = secret.hint;
        meta.append(" · hint ", hint);
      }
    }
  }
}

/**
 * The service's own readiness (providerReadiness in protocol/provider-routing.ts) when
 * GET /secrets reports it, else the same rule applied to the registry: a provider is ready when
 * every type it requires is saved.
 */
function providerStates(
  registry: Registry,
  status: SecretsStatus,
): readonly ProviderReadiness[] {
  if (Array.isArray(status.providers)) return status.providers;
  const saved = new Set(status.secrets.map((secret) => secret.secretType));
  return registry.providers.map((provider) => {
    const missing = provider.requires.filter((type) => !saved.has(type));
    return { ...provider, ready: missing.length === 0, missing };
  });
}

/** Which steps are enabled and which provider is ready; hidden without a session. */
export function renderReadiness(
  ui: ReadinessElements,
  registry: Registry,
  status: SecretsStatus | null,
): void {
  ui.readiness.hidden = status === null;
  if (status === null) return;
  const providers = providerStates(registry, status);

  ui.stepList.replaceChildren(...registry.stepKinds.map((kind) => {
    const ready = providers.filter((p) => p.ready && p.stepKinds.includes(kind));
    const item = document.createElement("li");
    item.dataset.step = kind;
    item.dataset.enabled = String(ready.length > 0);
    const name = document.createElement("strong");
    name.textContent = kind;
    item.append(
      name,
      ready.length > 0
        ? ` enabled via ${ready.map((p) => p.label).join(", ")}`
        : " not enabled: no provider for it is ready",
    );
    return item;
  }));

  ui.providerRows.replaceChildren(...providers.map((provider) => {
    const row = document.createElement("tr");
    row.dataset.provider = provider.id;
    row.dataset.ready = String(provider.ready);
    const name = document.createElement("th");
    name.scope = "row";
    name.textContent = provider.label;
    const steps = document.createElement("td");
    steps.textContent = provider.stepKinds.join(", ");
    const state = document.createElement("td");
    if (provider.ready) {
      state.textContent = "Ready";
      state.className = "ready";
    } else {
      state.className = "missing";
      state.append("Missing ");
      provider.missing.forEach((type, index) => {
        const code = document.createElement("code");
        code.textContent = type;
        state.append(...(index > 0 ? [", ", code] : [code]));
      });
    }
    row.append(name, steps, state);
    return row;
  }));
}

/** A <time> for an ISO 8601 instant, shown in the reader's locale. */
export function timeElement(iso: string): HTMLTimeElement {
  const time = document.createElement("time");
  time.dateTime = iso;
  time.textContent = new Date(iso).toLocaleString();
  return time;
}

/** Disables `button` (and marks it busy for assistive technology) while `work` runs. */
export async function busy(button: HTMLButtonElement, work: () => Promise<void>): Promise<void> {
  button.disabled = true;
  button.setAttribute("aria-busy", "true");
  try {
    await work();
  } finally {
    button.disabled = false;
    button.removeAttribute("aria-busy");
  }
}

export function shortAddress(address: string): string {
  return `${address.slice(0, 6)}…${address.slice(-4)}`;
}

/** One sentence for the status line; a service's own message where there is no better one. */
export function describeError(error: unknown): string {
  if (error instanceof VaultError) {
    switch (error.code) {
      case "network_error":
        return "The vault service could not be reached. Check your connection and try again.";
      case "timeout":
        return "The vault service did not answer in time. Try again.";
      case "not_signed_in":
      case "invalid_token":
      case "token_expired":
      case "session_revoked":
      case "invalid_refresh_token":
      case "refresh_token_reused":
        return "Your session has ended. Connect your wallet to sign in again.";
      case "session_changed":
        return "The wallet signed in here changed (in this tab or another) before this finished; " +
          "nothing was saved. Check which wallet is connected and try again.";
      case "signature_rejected":
        return "You declined in your wallet; nothing was done.";
      case "chain_not_allowed":
        return "Sign-in from this network is not accepted. Switch networks in your wallet and try again.";
      default:
        return error.message;
    }
  }
  return "Something went wrong. Try again.";
}
