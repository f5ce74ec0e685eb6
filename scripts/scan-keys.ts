/**
 * `deno task scan [--history] [paths…]`: looks for provider credentials in files: recipe files,
 * prompt files, committed environment files, anything. Without paths it scans the project as git
 * sees it: tracked files plus untracked ones that are not ignored, and staged content that differs
 * from the working copy; `--history` adds every file version in the history of HEAD (on a shallow
 * clone, only the part it holds: a warning and the summary say so, and the exit status does not
 * change). Prints file:line:column with each value masked, and the advice to rotate. Exit status:
 * 0 clean, 1 credentials found, 2 usage or I/O error.
 */
import {
  formatFinding,
  rotationAdvice,
  scanPaths,
  scanProject,
  type ScanReport,
} from "./lib/key-scanner.ts";

const USAGE = `Usage: deno task scan [--history] [paths…]

Scans the given files and directories (default: the project as git sees it, staged content
included) for provider credentials: values shaped like provider keys (sk-…, AKIA…, ghp_…,
AIza…, hf_…, r8_…, …) and literals assigned to credential names (the vault's secret types,
*_API_KEY, *_SECRET_KEY, …). Text may be UTF-8 or UTF-16, of any size.

  --history   also scan every file version in the history of HEAD (not with paths);
              each finding names a commit that holds it. A shallow clone holds only part
              of that history: only that part is read, and a warning says so.

Exit status 0: none found; 1: found (rotate them); 2: usage or read error.
A line containing "scan-keys:allow" is skipped (only for values that are not credentials).`;

// Not a failure: CI often checks out a shallow clone, and what it holds was read. But a clean
// result must not pass for the whole history.
const SHALLOW_WARNING = "warning: this is a shallow clone: --history read only the commits it " +
  "holds, not the history before them (`git fetch --unshallow` fetches the rest).";

async function main(args: string[]): Promise<number> {
  if (args.includes("-h") || args.includes("--help")) {
    console.log(USAGE);
    return 0;
  }
  const history = args.includes("--history");
  const unknown = args.filter((arg) => arg.startsWith("-") && arg !== "--history");
  if (unknown.length > 0) {
    console.error(`Unknown option ${unknown[0]}.\n\n${USAGE}`);
    return 2;
  }
  const paths = args.filter((arg) => !arg.startsWith("-"));
  if (history && paths.length > 0) {
    console.error(`--history scans the whole repository; it takes no paths.\n\n${USAGE}`);
    return 2;
  }
  // `deno task` runs in the project's folder; paths given on the command line are relative to
  // where it was typed.
  const invokedFrom = Deno.env.get("INIT_CWD") ?? Deno.cwd();
  let report: ScanReport;
  let display = (file: string) => file;
  if (paths.length > 0) {
    report = await scanPaths(
      paths.map((arg) => (arg.startsWith("/") ? arg : `${invokedFrom}/${arg}`)),
    );
    display = (file) =>
      file.startsWith(`${invokedFrom}/`) ? file.slice(invokedFrom.length + 1) : file;
  } else {
    report = await scanProject(Deno.cwd(), { history });
  }

  for (const finding of report.findings) {
    console.log(formatFinding({ ...finding, file: display(finding.file) }));
  }
  for (const { file, reason } of report.skipped) {
    if (reason !== "binary") console.error(`skipped ${display(file)}: ${reason}`);
  }
  if (report.historyShallow) console.error(SHALLOW_WARNING);
  if (report.findings.length > 0) {
    console.log(`\n${rotationAdvice(report.findings)}`);
    return 1;
  }
  const read = [`${report.filesScanned} files`];
  if (report.stagedScanned > 0) read.push(`${report.stagedScanned} staged (index) versions`);
  if (history) {
    const shallow = report.historyShallow ? " (shallow clone: only the commits it holds)" : "";
    read.push(`${report.historyScanned} versions from history${shallow}`);
  }
  console.log(`Scanned ${read.join(", ")}: no provider credentials found.`);
  return 0;
}

try {
  Deno.exit(await main(Deno.args));
} catch (error) {
  console.error(`scan failed: ${error instanceof Error ? error.message : String(error)}`);
  Deno.exit(2);
}
