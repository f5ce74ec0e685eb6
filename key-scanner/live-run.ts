/**
 * The project's own live-run credentials (`wvlr_…`, as live-run-credential-format.ts writes them),
 * told from look-alikes by their checksum: a match whose checksum fails is not reported.
 */
import {
  isLiveRunCredential,
  LIVE_RUN_CREDENTIAL_PATTERN,
  LIVE_RUN_CREDENTIAL_PREFIX,
} from "../functions/_shared/auth/live-run-credential-format.ts";
import type { Report } from "./finding.ts";

export const LIVE_RUN_CREDENTIAL_KIND = "wallet vault live-run credential (wvlr_…)";

/** Every well-formed live-run credential in `text`, checksum checked. */
export function findLiveRunCredentials(text: string, report: Report): void {
  if (!text.includes(LIVE_RUN_CREDENTIAL_PREFIX)) return;
  for (const match of text.matchAll(LIVE_RUN_CREDENTIAL_PATTERN)) {
    const value = match[0];
    if (!isLiveRunCredential(value)) continue;
    report(match.index, match.index + value.length, value, LIVE_RUN_CREDENTIAL_KIND);
  }
}
