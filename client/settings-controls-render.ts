/// <reference lib="dom" />
/**
 * The settings page's markup for the creator controls: the activity list, the signed-in devices
 * and the live-run lock, built with createElement, textContent and attributes only. No state:
 * settings-controls.ts passes in what to show and what to do.
 */
import type { ActivityEvent, CreatorSession, LockState } from "../sdk/src/browser.ts";
import { timeElement } from "./settings-render.ts";

/** What happened, in words; the types touched follow. */
function describeEvent(event: ActivityEvent): string {
  switch (event.kind) {
    case "saved":
      return "Saved";
    case "replaced":
      return "Replaced";
    case "deleted":
      return "Deleted";
    case "revealed":
      return event.credential === undefined ? "Read by a live run" : `${event.credential} revealed`;
    case "reveal_failed":
      return "A live run's read failed; nothing was released";
    case "reveal_refused":
      return event.reason === "vault_locked"
        ? `${liveRun(event)} was refused: live-run access is locked`
        : event.reason === "out_of_scope"
        ? `${liveRun(event)} was refused: its credential may not reveal these keys`
        : "A live run was refused: wrong or missing server credential";
    case "rotated":
      return "Re-encrypted under a new key by the operator";
    case "locked":
      return "Live-run access locked";
    case "unlocked":
      return "Live-run access unlocked";
  }
}

/** The service that acted, by its credential's name, when the event names one. */
const liveRun = (event: ActivityEvent): string => event.credential ?? "A live run";

const ACTORS: Readonly<Record<ActivityEvent["actor"], string>> = {
  browser: "your browser",
  live_run: "a live run",
  operator: "the operator",
};

export function activityItem(event: ActivityEvent): HTMLLIElement {
  const item = document.createElement("li");
  item.dataset.kind = event.kind;
  item.append(timeElement(event.at), " ");
  const what = document.createElement("span");
  what.className = "what";
  what.textContent = describeEvent(event);
  item.append(what);
  // A named service's reveal reads as a sentence: "image-worker revealed provider_b_key".
  const lead = event.kind === "revealed" && event.credential !== undefined ? " " : ": ";
  event.secretTypes.forEach((type, index) => {
    const code = document.createElement("code");
    code.textContent = type;
    item.append(index === 0 ? lead : ", ", code);
  });
  if (event.credential !== undefined) item.dataset.credential = event.credential;
  const who = document.createElement("span");
  who.className = "hint";
  who.textContent = ` · by ${ACTORS[event.actor]}`;
  item.append(who);
  return item;
}

/** One signed-in device; `signOut` is called with its button. */
export function sessionItem(
  session: CreatorSession,
  signOut: (session: CreatorSession, button: HTMLButtonElement) => void,
): HTMLLIElement {
  const item = document.createElement("li");
  item.className = "session";
  item.dataset.sessionId = session.id;
  item.dataset.current = String(session.current);
  const name = document.createElement("p");
  name.className = "session-client";
  const client = session.client ?? "A client that did not describe itself";
  if (session.current) {
    const here = document.createElement("strong");
    here.textContent = "This device";
    name.append(here, ` · ${client}`);
  } else {
    name.textContent = client;
  }
  const when = document.createElement("p");
  when.className = "meta";
  when.append("Signed in ", timeElement(session.signedInAt), " · ");
  if (session.lastRefreshedAt === null) when.append("never refreshed");
  else when.append("last refreshed ", timeElement(session.lastRefreshedAt));
  const button = document.createElement("button");
  button.type = "button";
  button.textContent = "Sign out";
  button.setAttribute(
    "aria-label",
    session.current
      ? "Sign out this device (asks your wallet to sign)"
      : `Sign out ${client}, signed in ${new Date(session.signedInAt).toLocaleString()} ` +
        "(asks your wallet to sign)",
  );
  button.addEventListener("click", () => signOut(session, button));
  item.append(name, when, button);
  return item;
}

/** The lock switch and the sentence beside it. */
export function renderLock(
  ui: { readonly lockSwitch: HTMLButtonElement; readonly lockState: HTMLElement },
  state: LockState | null,
): void {
  ui.lockSwitch.setAttribute("aria-checked", String(state?.locked ?? false));
  ui.lockSwitch.dataset.locked = String(state?.locked ?? false);
  ui.lockState.replaceChildren();
  if (state === null) return;
  if (state.locked && state.lockedAt !== null) {
    ui.lockState.append(
      "Locked since ",
      timeElement(state.lockedAt),
      ": every live run's read of your keys is refused.",
    );
  } else {
    ui.lockState.append("Unlocked: live runs signed in as you can read your keys.");
  }
}

/** The export's file name: the wallet and the day. */
export function exportFileName(walletAddress: string, at: string): string {
  return `wallet-vault-export-${walletAddress.slice(0, 10)}-${at.slice(0, 10)}.json`;
}

/** Offers `body` as a JSON file download, from memory (no request; CSP allows it). */
export function downloadJson(body: unknown, fileName: string): void {
  const blob = new Blob([JSON.stringify(body, null, 2)], { type: "application/json" });
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = fileName;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  // Let go later rather than at once: Chromium reads the blob after click() returns.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
