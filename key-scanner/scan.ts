/**
 * Finds provider credentials committed to files (keys never belong in recipe files, prompt files
 * or committed environment files; a key found there is compromised and must be rotated): values
 * shaped like a provider's key anywhere, bearer tokens and passwords in URLs, and literals given
 * to a credential's name. Placeholders are not findings, and a finding carries the value masked:
 * the report must not become a second leak.
 *
 * Besides the files, it reads git's staged blobs and, on request, every blob in the history of
 * HEAD or of every ref; an allow-list (allow.ts) drops findings by blob id or fingerprint.
 */
import type { BlobRef } from "./git.ts";
import { readBlobs } from "./git-blobs.ts";
import { historyBlobs, isShallow } from "./git-history.ts";
import { indexEntries, projectFiles, stagedChanges } from "./git-index.ts";
import { EMPTY_ALLOW_LIST } from "./allow.ts";
import { longRunReason, scanBytes } from "./byte-scan.ts";
import { amend } from "./finding.ts";
import { PathScan, type ScanOptions, type ScanReport } from "./path-scan.ts";

/**
 * Scans files and, recursively, directories (without .git and node_modules), in pieces whatever
 * their size. Symbolic links met on the way are followed when they lead to a file or directory
 * inside the directory being walked (each real file is read once), and reported as skipped when
 * they lead out of it; a path given as an argument is read wherever it leads.
 */
export async function scanPaths(
  paths: readonly string[],
  options: ScanOptions = {},
): Promise<ScanReport> {
  const scan = new PathScan(options.allow ?? EMPTY_ALLOW_LIST);
  for (const path of paths) {
    const info = await Deno.lstat(path).catch(() => null);
    if (info === null) throw new Deno.errors.NotFound(`No such file or directory: ${path}`);
    await scan.path(path, null);
  }
  return await scan.report();
}

/**
 * The project as git sees it, from `root` (a git working tree); paths in the report are relative
 * to it. Reads:
 *
 * - the working copy's tracked files and new files that are not ignored; links are followed
 *   inside `root` only, and a tracked file missing from the working copy is read from the index;
 * - staged content that differs from the working copy, or that git does not compare with it
 *   (assume-unchanged, skip-worktree): findings marked "staged";
 * - with `history`, every blob reachable from HEAD that was not read above, and with `allRefs`
 *   every blob reachable from any ref (branches, tags, remote-tracking branches, every stash
 *   entry), each finding marked with a commit that holds it (`historyShallow`: the clone is
 *   shallow, and holds only part of that history).
 */
export async function scanProject(
  root: string,
  options: ScanOptions & { history?: boolean; allRefs?: boolean } = {},
): Promise<ScanReport> {
  const realRoot = await Deno.realPath(root);
  const scan = new PathScan(options.allow ?? EMPTY_ALLOW_LIST);
  // The project is read file by file below; a link back to its root must not walk it again.
  scan.markSeen(realRoot);
  const files = await projectFiles(root);
  const index = await indexEntries(root);
  const staged = await stagedChanges(root, index);
  const stagedPaths = new Set(staged.map((entry) => entry.path));
  // Plain files first, so a file also reachable through a link is reported under its own name.
  const links: string[] = [];
  for (const file of files) {
    const info = await Deno.lstat(`${root}/${file}`).catch(() => null);
    if (info === null) {
      // Not skipped when its index version is read below (deleted, or out of a sparse checkout).
      if (!stagedPaths.has(file)) {
        scan.skipped.push({ file, reason: "deleted in the working copy" });
      }
    } else if (info.isSymlink) {
      links.push(file);
    } else {
      await scan.path(`${root}/${file}`, realRoot);
    }
  }
  for (const link of links) await scan.path(`${root}/${link}`, realRoot);
  const relative = (path: string) =>
    path.startsWith(`${root}/`) ? path.slice(root.length + 1) : path;
  for (const finding of scan.findings.splice(0)) {
    scan.findings.push(amend(finding, { file: relative(finding.file) }));
  }
  for (const skip of scan.skipped) skip.file = relative(skip.file);

  // Blobs read, so history need not read them again: index entries git vouches the working copy
  // shows, where that file was read, and the staged blobs read below. Only what was read counts.
  const read = new Set(
    index
      .filter((entry) => !stagedPaths.has(entry.path) && scan.hasRead(`${root}/${entry.path}`))
      .map((entry) => entry.sha),
  );
  const stagedScanned = await scanBlobs(root, staged, () => "staged", scan, read);

  let historyScanned = 0;
  let historyShallow = false;
  if (options.history || options.allRefs) {
    historyShallow = await isShallow(root);
    const past = (await historyBlobs(root, { allRefs: options.allRefs }))
      .filter((blob) => !read.has(blob.sha));
    historyScanned = await scanBlobs(root, past, (ref) => `commit ${ref.commit}`, scan, read);
  }
  return await scan.report({ stagedScanned, historyScanned, historyShallow });
}

/**
 * Scans the blobs into `scan`, adding each one's sha to `read`; returns how many were text. A
 * finding carries its blob's id; a binary blob is named among the skipped, with its source.
 */
async function scanBlobs(
  root: string,
  refs: readonly BlobRef[],
  sourceOf: (ref: BlobRef) => string,
  scan: PathScan,
  read: Set<string>,
): Promise<number> {
  let scanned = 0;
  for await (const blob of readBlobs(root, refs)) {
    const source = sourceOf(blob.ref);
    const { findings, binary, longRuns } = await scanBytes(blob.chunks, blob.ref.path, source);
    read.add(blob.ref.sha);
    if (binary) {
      scan.skipped.push({ file: blob.ref.path, reason: "binary", source });
      continue;
    }
    scanned++;
    for (const run of longRuns) {
      scan.skipped.push({ file: blob.ref.path, reason: longRunReason(run), source, longRun: true });
    }
    for (const finding of findings) scan.findings.push(amend(finding, { blob: blob.ref.sha }));
  }
  return scanned;
}
