/**
 * Every file version in the history of HEAD, or of every ref, as the key scanner reads it.
 */
import { type BlobRef, git, REGULAR_FILE_MODES } from "./git.ts";

const decoder = new TextDecoder();

/**
 * A shallow clone holds only part of the history: historyBlobs then reaches only the commits it
 * holds, and a key committed before them is not read.
 */
export async function isShallow(root: string): Promise<boolean> {
  const answer = await git(root, ["rev-parse", "--is-shallow-repository"]);
  return decoder.decode(answer).trim() === "true";
}

/**
 * Every regular-file blob reachable from HEAD (or, with `allRefs`, from every ref: branches, tags,
 * remote-tracking branches, notes, HEAD, and every stash entry, the older ones being only in the
 * stash's reflog), each with a commit that contains it and its path there: the commit that
 * introduced it (its diff against its first parent, or against nothing for a root commit, lists
 * it). Each blob of a commit's tree is either its parent's or new in that commit, so walking
 * every commit's diff reaches every blob. A stash entry is a merge whose parents hold the index
 * and the untracked files (a commit without parents), so its walk reaches them. Empty before the
 * first commit.
 */
export async function historyBlobs(
  root: string,
  options: { allRefs?: boolean } = {},
): Promise<BlobRef[]> {
  const revisions = options.allRefs ? ["--all", ...(await stashEntries(root))] : ["HEAD"];
  if (!options.allRefs && !(await refExists(root, "HEAD"))) return [];
  const log = await git(root, [
    "log",
    ...revisions,
    "-m", // merges: diff against each parent, so a blob made in a merge is listed too
    "--root",
    "--raw",
    "--no-abbrev",
    "--no-renames",
    "--no-ext-diff",
    "--no-textconv",
    "-z",
    "--format=%x01%H",
    "--",
  ]);
  const blobs = new Map<string, BlobRef>();
  const tokens = decoder.decode(log).split("\0");
  let commit = "";
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i].replace(/^\n/, "");
    if (token.startsWith("\x01")) {
      commit = token.slice(1);
    } else if (token.startsWith(":")) {
      // ":<old mode> <new mode> <old sha> <new sha> <status>", then the path
      const path = tokens[++i];
      const [, mode, , sha, status] = token.slice(1).split(" ");
      if (status === "D" || !REGULAR_FILE_MODES.has(mode) || blobs.has(sha)) continue;
      blobs.set(sha, { sha, path, commit });
    }
  }
  return [...blobs.values()];
}

async function refExists(root: string, ref: string): Promise<boolean> {
  const found = await new Deno.Command("git", {
    args: ["rev-parse", "--verify", "-q", ref],
    cwd: root,
    stdout: "null",
    stderr: "null",
  }).output();
  return found.success;
}

/** Every stash entry's commit, newest first (`refs/stash` names only the newest). */
async function stashEntries(root: string): Promise<string[]> {
  if (!(await refExists(root, "refs/stash"))) return [];
  const log = await git(root, ["log", "--walk-reflogs", "--format=%H", "refs/stash", "--"]);
  return decoder.decode(log).split("\n").filter((line) => /^[0-9a-f]{40,64}$/.test(line));
}
