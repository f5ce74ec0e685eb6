/**
 * Running git read-only for the key scanner, and the blobs its listings name. Nothing here writes
 * the index or takes its lock.
 */

export interface BlobRef {
  readonly sha: string;
  /** The path the blob has in the index, or in `commit`. */
  readonly path: string;
  /** For history: a commit whose tree holds the blob at `path`. */
  readonly commit?: string;
}

/** Regular files only: a link's blob is its target's path, a gitlink (160000) is a submodule. */
export const REGULAR_FILE_MODES = new Set(["100644", "100755", "100664"]);

const decoder = new TextDecoder();

/** git's output; throws with its error message when it fails. */
export async function git(root: string, args: string[]): Promise<Uint8Array> {
  const result = await new Deno.Command("git", {
    args,
    cwd: root,
    // Reading the index may otherwise refresh and rewrite it.
    env: { GIT_OPTIONAL_LOCKS: "0" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!result.success) {
    const message = decoder.decode(result.stderr).trim();
    throw new Error(`git ${args[0]} failed in ${root}: ${message}`);
  }
  return result.stdout;
}

export const nulSeparated = (bytes: Uint8Array) =>
  decoder.decode(bytes).split("\0").filter((s) => s);
