/**
 * Headless Chromium for the browser tests: Debian's /usr/bin/chromium driven by playwright-core (no
 * browser is ever downloaded). Without it a browser test is skipped, except under CI=true, where
 * it fails.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--no-first-run",
  "--disable-sync",
  "--disable-quic",
  "--disable-dev-shm-usage",
];
const ARTIFACTS = new URL("../../test-artifacts/", import.meta.url);

const hasChromium = (() => {
  try {
    return Deno.statSync(CHROMIUM).isFile;
  } catch {
    return false;
  }
})();
export const inCi = Deno.env.get("CI") === "true";

/** Whether a test needing Chromium is to be skipped; when it is, `what` is named in a warning. */
export function skipWithoutChromium(what: string): boolean {
  const skip = !hasChromium && !inCi;
  if (skip) {
    console.warn(`${what} skipped: ${CHROMIUM} is missing (Debian: apt-get install -y chromium).`);
  }
  return skip;
}

/** Throws when Chromium is missing: a test reaches this without it only under CI=true. */
export function requireChromium(): void {
  if (!hasChromium) {
    throw new Error(`CI=true but ${CHROMIUM} is missing: apt-get install -y chromium`);
  }
}

/**
 * playwright-core probes /proc/sys/fs/binfmt_misc/WSLInterop when its module loads, which Deno
 * allows only under --allow-all; this variable defers that probe (it matters on Windows hosts only),
 * so the module is imported after setting it rather than statically.
 */
export async function launchChromium(): Promise<Browser> {
  requireChromium();
  Deno.env.set("__IS_WSL_TEST__", "1");
  const { chromium } = await import("playwright-core");
  return await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

/** A new page of `context`, with every uncaught error its scripts throw collected. */
export async function openPage(
  context: BrowserContext,
): Promise<{ page: Page; pageErrors: string[] }> {
  const page = await context.newPage();
  const pageErrors: string[] = [];
  page.on("pageerror", (error) => pageErrors.push(error.message));
  return { page, pageErrors };
}

/** A full-page screenshot in test-artifacts/, for a person to look at. */
export async function screenshot(page: Page, name: string): Promise<void> {
  await Deno.mkdir(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: new URL(`${name}.png`, ARTIFACTS).pathname, fullPage: true });
}
