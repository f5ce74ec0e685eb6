/// <reference lib="dom" />
/**
 * The settings page: connect a wallet, then save, replace and delete provider keys (the creator
 * controls below them are settings-controls.ts'). Everything it knows about secret types comes
 * from /settings/registry.json (generated from the service's registry); everything about the
 * creator's keys from the vault client. Saved values are never rendered: the page only ever has
 * the masked metadata, and a typed value lives in its password field until it is sent, then the
 * field is cleared.
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
} from "../sdk/src/browser.ts";
import { createControls } from "./settings-controls.ts";
import {
  busy,
  describeError,
  type Registry,
  renderReadiness,
  renderSecretItems,
  secretItem,
  shortAddress,
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

// ---------------------------------------------------------------------------------------------
// Wallet section

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

/** Whose keys the page shows: null when signed out. */
let shownUser: string | null = null;
/** The latest read of the list that a session change started. */
let listing: Promise<void> = Promise.resolve();

/**
 * Every session change, this tab's or another's (a sign-in, refresh or sign-out elsewhere): the
 * card follows it, and when the creator changes, the list is read again and typed values are
 * cleared, so nothing typed for one creator is saved into another's vault.
 */
function sessionChanged(session: VaultSession | null): Promise<void> {
  showSession(session);
  const user = session?.user.id ?? null;
  if (user === shownUser) return listing;
  shownUser = user;
  clearValueFields();
  if (user === null) renderSecrets(null);
  listing = Promise.all([user === null ? null : refreshSecrets(), controls.show(user)]).then(
    () => {},
    (error) => announce(describeError(error), "error"),
  );
  return listing;
}

async function findWallets(): Promise<void> {
  wallets = await discoverWallets({ waitMs: 150 });
  ui.walletChoice.replaceChildren(
    ...wallets.map((wallet, index) => new Option(wallet.info.name, String(index))),
  );
  ui.walletChoiceField.hidden = wallets.length < 2;
}

/** The wallet chosen on the page (the only one, when there is one). */
async function chosenWallet(): Promise<DiscoveredWallet | undefined> {
  if (wallets.length === 0) await findWallets();
  return wallets[Number(ui.walletChoice.value) || 0];
}

const controls = createControls({ client, announce, chosenWallet, afterFailure });

async function connect(): Promise<void> {
  const wallet = await chosenWallet();
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
      // The session change that sign-in stores shows the card and reads the list.
      const session = await client.signIn(wallet.provider);
      announce(`Signed in as ${shortAddress(session.user.walletAddress)}.`, "success");
      await listing;
    } catch (error) {
      showSession(await client.getSession());
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

/**
 * Reads and shows the list. An answer for a creator no longer shown (another tab signed in as
 * someone else meanwhile) is dropped; a failure that ended the session is still reported.
 */
async function refreshSecrets(): Promise<void> {
  const forUser = shownUser;
  try {
    const status = await client.listSecrets();
    if (shownUser !== forUser) return;
    ui.notConfigured.hidden = status.configured;
    renderSecrets(status);
  } catch (error) {
    if (shownUser !== forUser && shownUser !== null) return;
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
      await controls.refreshActivity();
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
      await controls.refreshActivity();
    } catch (error) {
      announce(`Could not delete ${secretType}: ${describeError(error)}`, "error");
      await afterFailure(error);
    }
  });
}

/** When the service ended the session (or another tab did), the page shows what is stored. */
async function afterFailure(error: unknown): Promise<void> {
  if (error instanceof VaultError) await sessionChanged(await client.getSession());
}

// ---------------------------------------------------------------------------------------------

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
  client.onSessionChange((session) => void sessionChanged(session));

  renderSecrets(null);
  await sessionChanged(await client.getSession());
  await findWallets();
  // Lets tests (and impatient users' scripts) know the page is wired up.
  ui.wallet.dataset.ready = "true";
}

void start();
