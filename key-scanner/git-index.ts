/**
 * What git's index and working tree show the key scanner: the project's files, the index's blobs,
 * and which staged blobs the working copy may not show.
 */
import { type BlobRef, git, nulSeparated, REGULAR_FILE_MODES } from "./git.ts";

const decoder = new TextDecoder();

/**
 * The project's files as git sees them: tracked, plus untracked ones that are not ignored (about
 * to be committed). Paths are relative to `root`. Ignored files (.local/dev-keys.json) stay out.
 */
export async function projectFiles(root: string): Promise<string[]> {
  const files = nulSeparated(
    await git(root, ["ls-files", "-z", "--cached", "--others", "--exclude-standard"]),
  );
  return [...new Set(files)].sort();
}

/** Every index entry of a regular file: its blob and path (all stages of a conflict). */
export async function indexEntries(root: string): Promise<BlobRef[]> {
  const entries: BlobRef[] = [];
  for (const line of nulSeparated(await git(root, ["ls-files", "-s", "-z"]))) {
    // "<mode> <sha> <stage>\t<path>"
    const tab = line.indexOf("\t");
    const [mode, sha] = line.slice(0, tab).split(" ");
    if (REGULAR_FILE_MODES.has(mode)) entries.push({ sha, path: line.slice(tab + 1) });
  }
  return entries;
}

/**
 * Staged content the working copy may not show: the index blobs (of `index`, from indexEntries)
 * of files modified or deleted in the working copy since they were staged, and of files git does
 * not compare with the working copy (uncomparedPaths) whose working copy differs. Git vouches that
 * every other entry is what the working copy holds.
 */
export async function stagedChanges(root: string, index: readonly BlobRef[]): Promise<BlobRef[]> {
  const changed = new Set(nulSeparated(await git(root, ["ls-files", "-m", "-z"])));
  // Compared here instead: a working copy that still holds the staged blob is read there once.
  const uncompared = await uncomparedPaths(root);
  const shown = await workingCopyBlobs(root, uncompared);
  const staged = new Map(index.map((entry) => [entry.path, entry.sha]));
  for (const path of uncompared) {
    if (shown.get(path) !== staged.get(path)) changed.add(path);
  }
  return index.filter((entry) => changed.has(entry.path));
}

/**
 * The blob id git would give each path's working copy (applying its filters, as `git add` does),
 * for the paths that are regular files inside the tree; any other (missing, a link, a path with a
 * line break) has none, and so counts as differing from the index. One git process for them all.
 */
async function workingCopyBlobs(root: string, paths: readonly string[]) {
  const files: string[] = [];
  for (const path of paths) {
    const info = await Deno.lstat(`${root}/${path}`).catch(() => null);
    if (info?.isFile && !/[\r\n]/.test(path)) files.push(path);
  }
  const blobs = new Map<string, string>();
  if (files.length === 0) return blobs;
  const hashing = new Deno.Command("git", {
    args: ["hash-object", "--stdin-paths"],
    cwd: root,
    env: { GIT_OPTIONAL_LOCKS: "0" },
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = hashing.stdin.getWriter();
  await writer.write(new TextEncoder().encode(files.map((path) => `${path}\n`).join("")));
  await writer.close();
  const result = await hashing.output();
  if (!result.success) {
    throw new Error(`git hash-object failed in ${root}: ${decoder.decode(result.stderr).trim()}`);
  }
  decoder.decode(result.stdout).trim().split("\n").forEach((sha, i) => blobs.set(files[i], sha));
  return blobs;
}

/**
 * Paths whose index entry is flagged assume-unchanged (`git update-index --assume-unchanged`) or
 * skip-worktree (a sparse checkout sets it): `ls-files -m` never lists them, whatever the working
 * copy holds, or if it holds nothing. `ls-files -v` tags them with a lowercase letter, or `S`.
 */
async function uncomparedPaths(root: string): Promise<string[]> {
  // "<tag> <path>"
  return nulSeparated(await git(root, ["ls-files", "-v", "-z"]))
    .filter((line) => /^[a-zS] /.test(line))
    .map((line) => line.slice(2));
}
