/**
 * `deno task scan [--history | --all-refs] [paths…]`: looks for provider credentials in files:
 * recipe files, prompt files, committed environment files, anything. Without paths it scans the
 * project as git sees it: tracked files plus untracked ones that are not ignored, and staged
 * content that differs from the working copy; `--history` adds every file version in the history
 * of HEAD, `--all-refs` every file version reachable from any ref (branches, tags, remote-tracking
 * branches, every stash entry). On a shallow clone only the part it holds is read: a warning and
 * the summary say so, and the exit status does not change. Prints file:line:column with each value
 * masked and its fingerprint, what was skipped as binary, and the advice to rotate. Findings the
 * project's `.scan-keys-allow` covers (by blob id or fingerprint) are dropped and counted. Exit
 * status: 0 clean, 1 credentials found, 2 usage, allow-list or I/O error. Its users' page is
 * docs/key-scanner.md.
 */
import { ALLOW_FILE, ALLOW_MARKER, loadAllowList } from "./allow.ts";
import { amend, type Finding } from "./finding.ts";
import type { ScanReport } from "./path-scan.ts";
import { scanPaths, scanProject } from "./scan.ts";

const USAGE = `Usage: deno task scan [--history | --all-refs] [paths…]

Scans the given files and directories (default: the project as git sees it, staged content
included) for provider credentials: values shaped like provider keys (sk-…, AKIA…, ghp_…,
AIza…, hf_…, api_org_…, r8_…, …), literals assigned to credential names (the vault's secret
types, *_API_KEY, *_SECRET_KEY, provider-named ones such as MISTRAL_KEY, …) and bearer tokens,
also inside escapes, percent-encoding, HTML character references, base64, hex and hex dumps.
Text may be UTF-8, UTF-16 or Latin-1, of any size; what is skipped as binary, and base64 or hex
runs too long to decode, are named on stderr.

  --history   also scan every file version in the history of HEAD (not with paths);
              each finding names a commit that holds it. A shallow clone holds only part
              of that history: only that part is read, and a warning says so.
  --all-refs  the same for every ref: branches, tags, remote-tracking branches and every
              stash entry, with their history (not with paths).

Exit status 0: none found; 1: found (rotate them); 2: usage, allow-list or read error.
A line containing "${ALLOW_MARKER}" is skipped (only for values that are not credentials).
${ALLOW_FILE} in the project lists what is known not to be a credential, by blob id
("blob <sha>") or by the fingerprint a finding prints ("fingerprint <16 hex digits>").`;

const OPTIONS = new Set(["--history", "--all-refs"]);

// Not a failure: CI often checks out a shallow clone, and what it holds was read. But a clean
// result must not pass for the whole history.
const shallowWarning = (option: string) =>
  `warning: this is a shallow clone: ${option} read only the commits it holds, not the history ` +
  "before them (`git fetch --unshallow` fetches the rest).";

async function main(args: string[]): Promise<number> {
  if (args.includes("-h") || args.includes("--help")) {
    console.log(USAGE);
    return 0;
  }
  const history = args.includes("--history");
  const allRefs = args.includes("--all-refs");
  const unknown = args.filter((arg) => arg.startsWith("-") && !OPTIONS.has(arg));
  if (unknown.length > 0) {
    console.error(`Unknown option ${unknown[0]}.\n\n${USAGE}`);
    return 2;
  }
  const paths = args.filter((arg) => !arg.startsWith("-"));
  if ((history || allRefs) && paths.length > 0) {
    const option = allRefs ? "--all-refs" : "--history";
    console.error(`${option} scans the whole repository; it takes no paths.\n\n${USAGE}`);
    return 2;
  }
  // The project's allow-list: `deno task` runs in the project's folder.
  let allow;
  try {
    allow = await loadAllowList(Deno.cwd());
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    return 2;
  }
  // Paths given on the command line are relative to where it was typed.
  const invokedFrom = Deno.env.get("INIT_CWD") ?? Deno.cwd();
  let report: ScanReport;
  let display = (file: string) => file;
  if (paths.length > 0) {
    report = await scanPaths(
      paths.map((arg) => (arg.startsWith("/") ? arg : `${invokedFrom}/${arg}`)),
      { allow },
    );
    display = (file) =>
      file.startsWith(`${invokedFrom}/`) ? file.slice(invokedFrom.length + 1) : file;
  } else {
    report = await scanProject(Deno.cwd(), { history, allRefs, allow });
  }

  for (const finding of report.findings) {
    console.log(formatFinding(amend(finding, { file: display(finding.file) })));
  }
  let binary = 0;
  let longRuns = 0;
  for (const { file, reason, source, longRun } of report.skipped) {
    if (reason === "binary") binary++;
    if (longRun) longRuns++;
    const from = source === undefined ? "" : ` (${source})`;
    console.error(`skipped ${display(file)}${from}: ${reason}`);
  }
  if (report.historyShallow) console.error(shallowWarning(allRefs ? "--all-refs" : "--history"));
  const notes: string[] = [];
  if (binary > 0) notes.push(`Skipped as binary, not read: ${binary} (named above).`);
  if (longRuns > 0) {
    notes.push(`Encoded runs too long to decode, not read: ${longRuns} (named above).`);
  }
  const { byBlob, byFingerprint } = report.allowed;
  if (byBlob + byFingerprint > 0) {
    notes.push(
      `Allowed by ${ALLOW_FILE}: ${byBlob + byFingerprint} (${byBlob} by blob id, ` +
        `${byFingerprint} by fingerprint).`,
    );
  }
  if (report.findings.length > 0) {
    console.log(`\n${rotationAdvice(report.findings)}`);
    for (const note of notes) console.log(note);
    return 1;
  }
  const read = [`${report.filesScanned} files`];
  if (report.stagedScanned > 0) read.push(`${report.stagedScanned} staged (index) versions`);
  if (history || allRefs) {
    const scope = allRefs ? "every ref's history" : "history";
    const shallow = report.historyShallow ? " (shallow clone: only the commits it holds)" : "";
    read.push(`${report.historyScanned} versions from ${scope}${shallow}`);
  }
  console.log(`Scanned ${read.join(", ")}: no provider credentials found.`);
  for (const note of notes) console.log(note);
  return 0;
}

/** `file:line:column: kind: masked (source) fingerprint <16 hex digits>`. */
function formatFinding(finding: Finding): string {
  const where = `${finding.file}:${finding.line}:${finding.column}`;
  const source = finding.source === undefined ? "" : ` (${finding.source})`;
  const fingerprint = finding.fingerprint === undefined
    ? ""
    : ` fingerprint ${finding.fingerprint}`;
  return `${where}: ${finding.kind}: ${finding.masked}${source}${fingerprint}`;
}

/** What to do about findings: the keys are compromised, whatever happens to the files now. */
function rotationAdvice(findings: readonly Finding[]): string {
  const files = new Set(findings.map((finding) => finding.file)).size;
  return [
    `${findings.length} provider credential${findings.length === 1 ? "" : "s"} found in ${files} ` +
    `file${files === 1 ? "" : "s"}.`,
    "Treat each one as compromised: revoke it at the provider and create a new key now.",
    "Save the new key in the vault (PUT /api/secrets or the settings page), never in a recipe,",
    "prompt or environment file, and remove the old one from the file. Removing it is not enough",
    "on its own: it stays in the git history and in every clone, which is why it must be rotated.",
  ].join("\n");
}

try {
  Deno.exit(await main(Deno.args));
} catch (error) {
  console.error(`scan failed: ${error instanceof Error ? error.message : String(error)}`);
  Deno.exit(2);
}
