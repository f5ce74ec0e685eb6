/// <reference lib="dom" />
/**
 * The settings page's creator controls, through the vault client's `controls`: the activity
 * (newest first, a page at a time), the signed-in devices with a sign-out for each, the live-run
 * lock, export and account deletion. Locking takes the session alone; unlocking, signing a device
 * out and deleting the account ask the wallet for a fresh signature. settings.ts owns the session
 * and tells this module whose controls to show.
 */
import type { CreatorSession, DiscoveredWallet, VaultClient } from "../sdk/src/browser.ts";
import {
  activityItem,
  downloadJson,
  exportFileName,
  renderLock,
  sessionItem,
} from "./settings-controls-render.ts";
import { busy, describeError } from "./settings-render.ts";

/** Events per read of the activity. */
const ACTIVITY_PAGE = 20;

export interface ControlsDeps {
  readonly client: VaultClient;
  announce(text: string, tone?: "info" | "success" | "error"): void;
  /** The wallet chosen on the page, which signs; undefined when none is installed. */
  chosenWallet(): Promise<DiscoveredWallet | undefined>;
  /** After a failure that may have ended the session: the page follows the stored one. */
  afterFailure(error: unknown): Promise<void>;
}

export interface Controls {
  /** Reads and shows the controls of `user`, or hides them (null: signed out). */
  show(user: string | null): Promise<void>;
  /** Reads the activity's newest page again (after a save or a delete); never throws. */
  refreshActivity(): Promise<void>;
}

export function createControls(deps: ControlsDeps): Controls {
  const { client, announce } = deps;
  const byId = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
  const ui = {
    sections: ["live-run", "activity", "sessions", "account", "delete"].map((id) =>
      byId<HTMLElement>(id)
    ),
    lockSwitch: byId<HTMLButtonElement>("lock-switch"),
    lockState: byId<HTMLElement>("lock-state"),
    activityList: byId<HTMLOListElement>("activity-list"),
    activityEmpty: byId<HTMLElement>("activity-empty"),
    activityMore: byId<HTMLButtonElement>("activity-more"),
    sessionList: byId<HTMLUListElement>("session-list"),
    exportButton: byId<HTMLButtonElement>("export"),
    deleteStart: byId<HTMLButtonElement>("delete-start"),
    deleteConfirm: byId<HTMLElement>("delete-confirm"),
    deleteAccount: byId<HTMLButtonElement>("delete-account"),
    deleteCancel: byId<HTMLButtonElement>("delete-cancel"),
  };
  /** Whose controls are shown; an answer read for someone else is dropped. */
  let shown: string | null = null;
  let cursor: string | null = null;

  function showActivity(events: Parameters<typeof activityItem>[0][], next: string | null) {
    ui.activityList.append(...events.map(activityItem));
    cursor = next;
    ui.activityMore.hidden = next === null;
    ui.activityEmpty.hidden = ui.activityList.childElementCount > 0;
  }

  async function readActivity(): Promise<void> {
    const user = shown;
    const page = await client.controls.activity({ limit: ACTIVITY_PAGE });
    if (shown !== user) return;
    ui.activityList.replaceChildren();
    showActivity([...page.events], page.nextCursor);
  }

  async function readSessions(): Promise<void> {
    const user = shown;
    const { sessions } = await client.controls.listSessions();
    if (shown !== user) return;
    ui.sessionList.replaceChildren(...sessions.map((s) => sessionItem(s, signOutSession)));
  }

  async function readLock(): Promise<void> {
    const user = shown;
    const state = await client.controls.lockState();
    if (shown === user) renderLock(ui, state);
  }

  async function fail(what: string, error: unknown): Promise<void> {
    announce(`${what}: ${describeError(error)}`, "error");
    await deps.afterFailure(error);
  }

  /** The wallet to sign with, or undefined after saying there is none. */
  async function signingWallet(act: string): Promise<DiscoveredWallet | undefined> {
    const wallet = await deps.chosenWallet();
    if (wallet === undefined) {
      announce(`No wallet found to sign with: ${act} needs your wallet's signature.`, "error");
    } else {
      announce(`Check ${wallet.info.name}: sign to ${act}.`);
    }
    return wallet;
  }

  async function loadMore(): Promise<void> {
    await busy(ui.activityMore, async () => {
      const user = shown;
      if (cursor === null) return;
      try {
        const page = await client.controls.activity({ limit: ACTIVITY_PAGE, cursor });
        if (shown !== user) return;
        showActivity([...page.events], page.nextCursor);
        announce(`Loaded ${page.events.length} older events.`, "success");
      } catch (error) {
        await fail("Could not load more activity", error);
      }
    });
  }

  async function toggleLock(): Promise<void> {
    const locked = ui.lockSwitch.getAttribute("aria-checked") === "true";
    await busy(ui.lockSwitch, async () => {
      try {
        if (!locked) {
          renderLock(ui, await client.controls.lock());
          announce(
            "Live-run access locked: every live run's read of your keys is refused. Keys already " +
              "read cannot be recalled: if you suspect misuse, rotate them at their provider.",
            "success",
          );
        } else {
          const wallet = await signingWallet("unlock live-run access");
          if (wallet === undefined) return;
          await client.controls.unlock(wallet.provider);
          renderLock(ui, { locked: false, lockedAt: null });
          announce("Live-run access unlocked.", "success");
        }
      } catch (error) {
        await fail(locked ? "Could not unlock" : "Could not lock", error);
        return;
      }
      await refreshActivity();
    });
  }

  function signOutSession(session: CreatorSession, button: HTMLButtonElement): void {
    void busy(button, async () => {
      const which = session.current ? "this device" : "that device";
      const wallet = await signingWallet(`sign out ${which}`);
      if (wallet === undefined) return;
      try {
        const { signedOut } = await client.controls.signOutSessions(wallet.provider, [session.id]);
        announce(
          signedOut === 1 ? `Signed out ${which}.` : `${which} was already signed out.`,
          "success",
        );
        // This device's own sign-out reaches the page as a session change.
        if (!session.current) await readSessions();
      } catch (error) {
        await fail(`Could not sign out ${which}`, error);
      }
    });
  }

  async function exportData(): Promise<void> {
    await busy(ui.exportButton, async () => {
      try {
        const exported = await client.controls.exportAccount();
        downloadJson(exported, exportFileName(exported.creator.walletAddress, exported.exportedAt));
        announce(
          "Exported your keys' details and activity (never a key) as a JSON file.",
          "success",
        );
      } catch (error) {
        await fail("Could not export", error);
      }
    });
  }

  function confirmDelete(open: boolean): void {
    ui.deleteConfirm.hidden = !open;
    ui.deleteStart.setAttribute("aria-expanded", String(open));
  }

  async function deleteAccount(): Promise<void> {
    await busy(ui.deleteAccount, async () => {
      const wallet = await signingWallet("delete your account");
      if (wallet === undefined) return;
      try {
        await client.controls.deleteAccount(wallet.provider);
      } catch (error) {
        await fail("Could not delete the account", error);
        return;
      }
      // The session has been forgotten: the page is signed out by the session change.
      announce(
        "Account deleted: every key and session is gone. Signing in again with this wallet " +
          "starts a new, empty vault.",
        "success",
      );
      document.getElementById("connect")?.focus();
    });
  }

  async function refreshActivity(): Promise<void> {
    if (shown === null) return;
    await readActivity().catch((error) => fail("Could not read the activity", error));
  }

  ui.lockSwitch.addEventListener("click", () => void toggleLock());
  ui.activityMore.addEventListener("click", () => void loadMore());
  ui.exportButton.addEventListener("click", () => void exportData());
  ui.deleteStart.addEventListener("click", () => {
    confirmDelete(true);
    ui.deleteAccount.focus();
  });
  ui.deleteCancel.addEventListener("click", () => {
    confirmDelete(false);
    ui.deleteStart.focus();
  });
  ui.deleteAccount.addEventListener("click", () => void deleteAccount());

  return {
    async show(user) {
      if (user === shown) return;
      shown = user;
      cursor = null;
      for (const section of ui.sections) section.hidden = user === null;
      confirmDelete(false);
      ui.activityList.replaceChildren();
      ui.sessionList.replaceChildren();
      renderLock(ui, null);
      if (user === null) return;
      await Promise.all([readLock(), readActivity(), readSessions()]);
    },
    refreshActivity,
  };
}
