/**
 * What the key scanner reads from git besides the working copy: staged content that differs from
 * it (or that git does not compare with it), every file version in the history of HEAD or of
 * every ref, and the bytes of those blobs, streamed from one `git cat-file --batch`. Read-only:
 * nothing here writes the index or takes its lock.
 */

export interface BlobRef {
  readonly sha: string;
  /** The path the blob has in the index, or in `commit`. */
  readonly path: string;
  /** For history: a commit whose tree holds the blob at `path`. */
  readonly commit?: string;
}

export interface Blob {
  readonly ref: BlobRef;
  readonly size: number;
  /** The content in pieces; read it (or stop early) before asking for the next blob. */
  readonly chunks: AsyncIterable<Uint8Array>;
}

/** Regular files only: a link's blob is its target's path, a gitlink (160000) is a submodule. */
const REGULAR_FILE_MODES = new Set(["100644", "100755", "100664"]);
const CHUNK_BYTES = 1 << 20;
const decoder = new TextDecoder();

async function git(root: string, args: string[]): Promise<Uint8Array> {
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

const nulSeparated = (bytes: Uint8Array) => decoder.decode(bytes).split("\0").filter((s) => s);

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

/** The blobs' contents, in the order given, from one `git cat-file --batch`. */
export async function* readBlobs(root: string, refs: readonly BlobRef[]): AsyncGenerator<Blob> {
  if (refs.length === 0) return;
  const child = new Deno.Command("git", {
    args: ["cat-file", "--batch"],
    cwd: root,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  // Written while the answers are read: git stops reading once its output is not taken.
  const writing = (async () => {
    const writer = child.stdin.getWriter();
    try {
      for (let i = 0; i < refs.length; i += 1000) {
        const batch = refs.slice(i, i + 1000).map((ref) => `${ref.sha}\n`).join("");
        await writer.write(new TextEncoder().encode(batch));
      }
      await writer.close();
    } catch {
      // git went away; its exit status says why
    }
  })();
  const reader = new ByteReader(child.stdout.getReader());
  let finished = false;
  let status: Deno.CommandStatus;
  try {
    for (const ref of refs) {
      const header = await reader.line();
      if (header === null) throw new Error("git cat-file ended early");
      // "<sha> blob <size>" or "<sha> missing"
      const [, type, sizeText] = header.split(" ");
      if (type !== "blob") throw new Error(`git cat-file: ${ref.sha} is ${type ?? "unreadable"}`);
      const state = { remaining: Number(sizeText) };
      yield { ref, size: Number(sizeText), chunks: blobChunks(reader, state) };
      // Whatever the consumer did not read, then the newline after the content.
      while (state.remaining > 0) {
        const skipped = await reader.take(Math.min(state.remaining, CHUNK_BYTES));
        if (skipped === null) throw new Error("git cat-file ended early");
        state.remaining -= skipped.length;
      }
      await reader.line();
    }
    finished = true;
  } finally {
    if (!finished) {
      try {
        child.kill();
      } catch {
        // already gone
      }
    }
    await reader.cancel();
    await writing;
    status = await child.status;
  }
  if (!status.success) throw new Error(`git cat-file failed: ${(await stderr).trim()}`);
}

async function* blobChunks(
  reader: ByteReader,
  state: { remaining: number },
): AsyncGenerator<Uint8Array> {
  while (state.remaining > 0) {
    const chunk = await reader.take(Math.min(state.remaining, CHUNK_BYTES));
    if (chunk === null) throw new Error("git cat-file ended early");
    state.remaining -= chunk.length;
    yield chunk;
  }
}

/** Lines and counted bytes from a byte stream. */
class ByteReader {
  #buffer = new Uint8Array(0);
  #offset = 0;
  #ended = false;

  constructor(readonly reader: ReadableStreamDefaultReader<Uint8Array>) {}

  async #more(): Promise<boolean> {
    if (this.#ended) return false;
    const { done, value } = await this.reader.read();
    if (done) {
      this.#ended = true;
      return false;
    }
    const rest = this.#buffer.subarray(this.#offset);
    const merged = new Uint8Array(rest.length + value.length);
    merged.set(rest);
    merged.set(value, rest.length);
    this.#buffer = merged;
    this.#offset = 0;
    return true;
  }

  /** The next line without its newline; null at the end of the stream. */
  async line(): Promise<string | null> {
    for (;;) {
      const newline = this.#buffer.indexOf(10, this.#offset);
      if (newline >= 0) {
        const line = decoder.decode(this.#buffer.subarray(this.#offset, newline));
        this.#offset = newline + 1;
        return line;
      }
      if (!(await this.#more())) return null;
    }
  }

  /** Between 1 and `max` bytes, as they arrive; null at the end of the stream. */
  async take(max: number): Promise<Uint8Array | null> {
    if (this.#offset >= this.#buffer.length && !(await this.#more())) return null;
    const end = Math.min(this.#buffer.length, this.#offset + max);
    const bytes = this.#buffer.slice(this.#offset, end);
    this.#offset = end;
    return bytes;
  }

  async cancel(): Promise<void> {
    await this.reader.cancel().catch(() => {});
  }
}
