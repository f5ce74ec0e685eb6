/// <reference lib="dom" />
/**
 * The settings page: connect a wallet, then save, replace and delete provider keys. Everything it
 * knows about secret types comes from /settings/registry.json (generated from the service's
 * registry); everything about the creator's keys from the vault client. Saved values are never
 * rendered: the page only ever has the masked metadata, and a typed value lives in its password
 * field until it is sent, then the field is cleared.
 *
 * Data is put into the page with textContent and attributes only, never as markup.
 */
import {
  createVaultClient,
  type DiscoveredWallet,
  discoverWallets,
  type SecretsStatus,
  type SecretType,
  SignatureRejectedError,
  VaultError,
  type VaultSession,
} from "../sdk/browser.ts";
import {
  type Registry,
  renderReadiness,
  renderSecretItems,
  secretItem,
} from "./settings-render.ts";

const apiBase = new URL(
  document.querySelector<HTMLMetaElement>('meta[name="vault-api"]')?.content ?? "/api",
  location.origin,
).href;
const client = createVaultClient({ baseUrl: apiBase });

const byId = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const ui = {
  wallet: byId<HTMLElement>("wallet"),
  signedOut: byId<HTMLElement>("signed-out"),
  signedIn: byId<HTMLElement>("signed-in"),
  walletChoiceField: byId<HTMLElement>("wallet-choice-field"),
  walletChoice: byId<HTMLSelectElement>("wallet-choice"),
  connect: byId<HTMLButtonElement>("connect"),
  signOut: byId<HTMLButtonElement>("sign-out"),
  signOutEverywhere: byId<HTMLButtonElement>("sign-out-everywhere"),
  address: byId<HTMLElement>("address"),
  status: byId<HTMLElement>("status"),
  projectName: byId<HTMLElement>("project-name"),
  readiness: byId<HTMLElement>("readiness"),
  stepList: byId<HTMLUListElement>("step-list"),
  providerRows: byId<HTMLTableSectionElement>("provider-rows"),
  keysSignedOut: byId<HTMLElement>("keys-signed-out"),
  notConfigured: byId<HTMLElement>("not-configured"),
  secretList: byId<HTMLOListElement>("secret-list"),
};

let registry: Registry;
let wallets: DiscoveredWallet[] = [];

// ---------------------------------------------------------------------------------------------
// Status line (aria-live): one short sentence per outcome.

function announce(text: string, tone: "info" | "success" | "error" = "info"): void {
  ui.status.textContent = text;
  ui.status.dataset.tone = tone;
}

function describeError(error: unknown): string {
  if (error instanceof VaultError) {
    switch (error.code) {
      case "network_error":
        return "The vault service could not be reached. Check your connection and try again.";
      case "not_signed_in":
      case "invalid_token":
      case "token_expired":
      case "session_revoked":
      case "invalid_refresh_token":
      case "refresh_token_reused":
        return "Your session has ended. Connect your wallet to sign in again.";
      case "chain_not_allowed":
        return "Sign-in from this network is not accepted. Switch networks in your wallet and try again.";
      default:
        return error.message;
    }
  }
  return "Something went wrong. Try again.";
}

// ---------------------------------------------------------------------------------------------
// Wallet section

export function shortAddress(address: string): string {
  return `${address.slice(0, 6)}…${address.slice(-4)}`;
}

function showSession(session: VaultSession | null): void {
  ui.wallet.dataset.state = session ? "signed-in" : "signed-out";
  ui.signedIn.hidden = session === null;
  ui.signedOut.hidden = session !== null;
  ui.keysSignedOut.hidden = session !== null;
  ui.address.textContent = session ? shortAddress(session.user.walletAddress) : "";
  if (session) {
    ui.address.title = session.user.walletAddress;
    ui.address.dataset.address = session.user.walletAddress;
  } else {
    ui.address.removeAttribute("title");
    delete ui.address.dataset.address;
  }
}

async function findWallets(): Promise<void> {
  wallets = await discoverWallets({ waitMs: 150 });
  ui.walletChoice.replaceChildren(
    ...wallets.map((wallet, index) => new Option(wallet.info.name, String(index))),
  );
  ui.walletChoiceField.hidden = wallets.length < 2;
}

async function connect(): Promise<void> {
  if (wallets.length === 0) await findWallets();
  const wallet = wallets[Number(ui.walletChoice.value) || 0];
  if (wallet === undefined) {
    announce(
      "No wallet found. Install an Ethereum wallet extension, then reload this page.",
      "error",
    );
    return;
  }
  await busy(ui.connect, async () => {
    ui.wallet.dataset.state = "signing";
    announce(`Check ${wallet.info.name}: sign the message to continue.`);
    try {
      const session = await client.signIn(wallet.provider);
      announce(`Signed in as ${shortAddress(session.user.walletAddress)}.`, "success");
      await refreshSecrets();
    } catch (error) {
      showSession(null);
      if (error instanceof SignatureRejectedError) {
        ui.wallet.dataset.state = "signature-rejected";
        announce(
          error.step === "sign"
            ? "Signature rejected. You declined the sign-in request in your wallet; nothing was signed."
            : "Connection rejected. You declined to connect your wallet.",
          "error",
        );
      } else {
        announce(`Sign-in failed: ${describeError(error)}`, "error");
      }
    }
  });
}

async function signOut(): Promise<void> {
  await busy(ui.signOut, async () => {
    await client.signOut();
    clearValueFields();
    renderSecrets(null);
    announce("Signed out.", "success");
    ui.connect.focus();
  });
}

async function signOutEverywhere(): Promise<void> {
  await busy(ui.signOutEverywhere, async () => {
    try {
      await client.signOut({ scope: "global" });
    } catch (error) {
      // Still signed in here unless the session had already ended: the creator can try again.
      announce(`Could not sign out everywhere: ${describeError(error)}`, "error");
      return;
    }
    clearValueFields();
    renderSecrets(null);
    announce("Signed out on every device.", "success");
    ui.connect.focus();
  });
}

// ---------------------------------------------------------------------------------------------
// Keys

function renderSecrets(status: SecretsStatus | null): void {
  renderSecretItems(ui.secretList, status);
  renderReadiness(ui, registry, status);
}

function clearValueFields(): void {
  for (const input of ui.secretList.querySelectorAll<HTMLInputElement>("input")) input.value = "";
}

async function refreshSecrets(): Promise<void> {
  try {
    const status = await client.listSecrets();
    ui.notConfigured.hidden = status.configured;
    renderSecrets(status);
  } catch (error) {
    renderSecrets(null);
    throw error;
  }
}

async function saveSecret(
  secretType: SecretType,
  input: HTMLInputElement,
  button: HTMLButtonElement,
): Promise<void> {
  if (input.value === "") {
    announce(`Type the value for ${secretType} first.`, "error");
    input.focus();
    return;
  }
  await busy(button, async () => {
    try {
      const result = await client.saveSecret(secretType, input.value);
      input.value = "";
      await refreshSecrets();
      announce(`${result.created ? "Saved" : "Replaced"} ${secretType}.`, "success");
    } catch (error) {
      announce(`Could not save ${secretType}: ${describeError(error)}`, "error");
      await afterFailure(error);
    }
  });
}

async function deleteSecret(secretType: SecretType, button: HTMLButtonElement): Promise<void> {
  await busy(button, async () => {
    try {
      await client.deleteSecret(secretType);
      await refreshSecrets();
      announce(`Deleted ${secretType}.`, "success");
      document.getElementById(`value-${secretType}`)?.focus();
    } catch (error) {
      announce(`Could not delete ${secretType}: ${describeError(error)}`, "error");
      await afterFailure(error);
    }
  });
}

/** When the service ended the session, the page goes back to the signed-out state. */
async function afterFailure(error: unknown): Promise<void> {
  if (error instanceof VaultError && (await client.getSession()) === null) {
    clearValueFields();
    renderSecrets(null);
  }
}

// ---------------------------------------------------------------------------------------------

async function busy(button: HTMLButtonElement, work: () => Promise<void>): Promise<void> {
  button.disabled = true;
  button.setAttribute("aria-busy", "true");
  try {
    await work();
  } finally {
    button.disabled = false;
    button.removeAttribute("aria-busy");
  }
}

async function start(): Promise<void> {
  const [registryResponse, anonymous] = await Promise.all([
    fetch("/settings/registry.json").then((r) => r.json() as Promise<Registry>),
    client.status().catch(() => null),
  ]);
  registry = registryResponse;
  if (anonymous) {
    ui.projectName.textContent = anonymous.project;
    ui.notConfigured.hidden = anonymous.configured;
  }
  ui.secretList.replaceChildren(
    ...registry.secretTypes.map((t) =>
      secretItem(t.secretType, t.purpose, { save: saveSecret, remove: deleteSecret })
    ),
  );
  ui.connect.addEventListener("click", () => void connect());
  ui.signOut.addEventListener("click", () => void signOut());
  ui.signOutEverywhere.addEventListener("click", () => void signOutEverywhere());
  client.onSessionChange(showSession);

  const session = await client.getSession();
  showSession(session);
  renderSecrets(null);
  if (session) {
    try {
      await refreshSecrets();
    } catch (error) {
      announce(describeError(error), "error");
      showSession(await client.getSession());
    }
  }
  await findWallets();
  // Lets tests (and impatient users' scripts) know the page is wired up.
  ui.wallet.dataset.ready = "true";
}

void start();
