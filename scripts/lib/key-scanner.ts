/**
 * Finds provider credentials committed to files (keys never belong in recipe files, prompt files
 * or committed environment files; a key found there is compromised and must be rotated). Two
 * kinds of evidence:
 *
 * - a value shaped like a well-known provider key (`sk-…`, `AKIA…`, `ghp_…`, …) anywhere, and
 * - a literal assigned to a credential name: one of the vault's seven secret types, or a name
 *   ending in API_KEY, SECRET_KEY, ACCESS_KEY, API_TOKEN or AUTH_TOKEN (any case, `apiKey` too).
 *
 * Placeholders (`sk-...`, `<your key>`, `${OPENAI_API_KEY}`, `xxxx`, `your_api_key_here`) are
 * not findings. A finding carries the value masked, never whole: the report must not become a
 * second leak.
 *
 * Text is read in pieces (any size), as UTF-8, UTF-16 (by its byte-order mark, NULs in
 * alternating bytes, or the pattern of its bytes) or 8-bit Latin-1; a file is skipped as binary
 * only when its first 8 KB are not text, and what is skipped is reported. Inside the text, escapes,
 * percent-encodings, base64 and hex are decoded too. Besides files, it reads git's staged blobs
 * and, on request, every blob in the history of HEAD or of every ref (on a shallow clone, only
 * the commits it holds: the report says so). An allow-list (key-allow.ts) drops findings by blob
 * id or fingerprint.
 *
 * The rules are in key-rules.ts, reading text and bytes in key-text.ts and key-decode.ts; this
 * module walks files, git's index and history, and reports.
 */
import { createHash } from "node:crypto";
import {
  type BlobRef,
  historyBlobs,
  indexEntries,
  isShallow,
  readBlobs,
  stagedChanges,
} from "./git-blobs.ts";
import { type AllowList, EMPTY_ALLOW_LIST } from "./key-allow.ts";
import { amend, type Finding, fingerprintOf } from "./key-rules.ts";
import { scanBytes } from "./key-text.ts";

export { maskSecret } from "./key-rules.ts";
export type { Finding } from "./key-rules.ts";
export { LineScanner, scanText } from "./key-text.ts";

/** A file or blob not read, and why; `source` as a finding's ("staged", "commit <sha>"). */
export interface Skipped {
  file: string;
  readonly reason: string;
  readonly source?: string;
}

export interface ScanOptions {
  /** Findings to drop (by blob id or fingerprint). */
  readonly allow?: AllowList;
}

export interface ScanReport {
  /** Each with its fingerprint. */
  readonly findings: Finding[];
  /** Files of the working copy (or given paths) read as text. */
  readonly filesScanned: number;
  /** Staged blobs read (content the working copy does not show, or git does not compare). */
  readonly stagedScanned: number;
  /** Blobs from the history of HEAD (--history) or of every ref (--all-refs) read. */
  readonly historyScanned: number;
  /** --history on a shallow clone: only the commits the clone holds were read. */
  readonly historyShallow: boolean;
  /** Files and blobs not read, with why (binary, a link out of the tree, deleted, …). */
  readonly skipped: ReadonlyArray<Skipped>;
  /** Findings the allow-list dropped, by what matched. */
  readonly allowed: { readonly byBlob: number; readonly byFingerprint: number };
}

const SKIPPED_DIRECTORIES = new Set([".git", "node_modules"]);

const within = (path: string, root: string) => path === root || path.startsWith(`${root}/`);

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

/** Scanning state shared by a run: what was read (by real path), found and skipped. */
class PathScan {
  readonly findings: Finding[] = [];
  readonly skipped: Skipped[] = [];
  readonly #seen = new Set<string>();
  /** Files opened and read to the end (as text, or sniffed as binary). */
  readonly #read = new Set<string>();
  readonly #allow: AllowList;
  filesScanned = 0;

  constructor(allow: AllowList) {
    this.#allow = allow;
  }

  /** Counts `real` as read already: a link to it is not followed. */
  markSeen(real: string): void {
    this.#seen.add(real);
  }

  /** Whether the file at `path` (as passed to `file`) was read. */
  hasRead(path: string): boolean {
    return this.#read.has(path);
  }

  /**
   * `tree`: the real path of the directory a link must stay inside (null: a path given by the
   * caller, followed wherever it leads).
   */
  async path(path: string, tree: string | null): Promise<void> {
    const info = await Deno.lstat(path);
    let real = path;
    if (info.isSymlink) {
      try {
        real = await Deno.realPath(path);
      } catch {
        this.skipped.push({ file: path, reason: "broken link" });
        return;
      }
      if (tree !== null && !within(real, tree)) {
        this.skipped.push({ file: path, reason: "link to outside the tree, not followed" });
        return;
      }
    } else {
      real = await Deno.realPath(path);
    }
    if (this.#seen.has(real)) return; // already read through another path (or a link cycle)
    this.#seen.add(real);
    const target = info.isSymlink ? await Deno.stat(real) : info;
    if (target.isDirectory) {
      const entries: string[] = [];
      for await (const entry of Deno.readDir(path)) {
        if (!(entry.isDirectory && SKIPPED_DIRECTORIES.has(entry.name))) entries.push(entry.name);
      }
      const inside = tree ?? real;
      for (const name of entries.sort()) {
        await this.path(`${path.replace(/\/+$/, "")}/${name}`, inside);
      }
    } else if (target.isFile) {
      await this.file(path);
    }
  }

  async file(path: string): Promise<void> {
    const file = await Deno.open(path);
    // The blob id git gives this content, for the allow-list: hashed as it is read.
    const size = (await file.stat()).size;
    const hash = this.#allow.blobs.size > 0 ? createHash("sha1").update(`blob ${size}\0`) : null;
    // The stream closes the file when read to the end or cancelled.
    const chunks = hash === null ? file.readable : hashed(file.readable, hash);
    const { findings, binary } = await scanBytes(chunks, path);
    this.#read.add(path);
    if (binary) {
      this.skipped.push({ file: path, reason: "binary" });
      return;
    }
    this.filesScanned++;
    const blob = hash?.digest("hex");
    for (const finding of findings) {
      this.findings.push(blob === undefined ? finding : amend(finding, { blob }));
    }
  }

  /** Fingerprints each finding, and drops what the allow-list covers. */
  async report(
    extra: { stagedScanned?: number; historyScanned?: number; historyShallow?: boolean } = {},
  ): Promise<ScanReport> {
    const findings: Finding[] = [];
    const allowed = { byBlob: 0, byFingerprint: 0 };
    const rest = this.findings.filter((finding) => {
      const byBlob = finding.blob !== undefined && this.#allow.blobs.has(finding.blob);
      if (byBlob) allowed.byBlob++;
      return !byBlob;
    });
    // In batches: the hashes run on other threads, a batch at a time.
    for (let i = 0; i < rest.length; i += 64) {
      const batch = rest.slice(i, i + 64);
      const hashes = await Promise.all(batch.map(fingerprintOf));
      batch.forEach((finding, k) => {
        if (this.#allow.fingerprints.has(hashes[k])) allowed.byFingerprint++;
        else findings.push(amend(finding, { fingerprint: hashes[k] }));
      });
    }
    return {
      findings,
      filesScanned: this.filesScanned,
      stagedScanned: extra.stagedScanned ?? 0,
      historyScanned: extra.historyScanned ?? 0,
      historyShallow: extra.historyShallow ?? false,
      skipped: this.skipped,
      allowed,
    };
  }
}

async function* hashed(
  chunks: AsyncIterable<Uint8Array>,
  hash: ReturnType<typeof createHash>,
): AsyncGenerator<Uint8Array> {
  for await (const chunk of chunks) {
    hash.update(chunk);
    yield chunk;
  }
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
    const { findings, binary } = await scanBytes(blob.chunks, blob.ref.path, source);
    read.add(blob.ref.sha);
    if (binary) {
      scan.skipped.push({ file: blob.ref.path, reason: "binary", source });
      continue;
    }
    scanned++;
    for (const finding of findings) scan.findings.push(amend(finding, { blob: blob.ref.sha }));
  }
  return scanned;
}

/**
 * The project's files as git sees them: tracked, plus untracked ones that are not ignored (about
 * to be committed). Paths are relative to `root`. Ignored files (.local/dev-keys.json) stay out.
 */
export async function projectFiles(root: string): Promise<string[]> {
  const result = await new Deno.Command("git", {
    args: ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
    cwd: root,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!result.success) {
    const message = new TextDecoder().decode(result.stderr).trim();
    throw new Error(`git ls-files failed in ${root}: ${message}`);
  }
  const files = new TextDecoder().decode(result.stdout).split("\0").filter((f) => f !== "");
  return [...new Set(files)].sort();
}

/** `file:line:column: kind: masked (source) fingerprint <16 hex digits>`. */
export function formatFinding(finding: Finding): string {
  const where = `${finding.file}:${finding.line}:${finding.column}`;
  const source = finding.source === undefined ? "" : ` (${finding.source})`;
  const fingerprint = finding.fingerprint === undefined
    ? ""
    : ` fingerprint ${finding.fingerprint}`;
  return `${where}: ${finding.kind}: ${finding.masked}${source}${fingerprint}`;
}

/** What to do about findings: the keys are compromised, whatever happens to the files now. */
export function rotationAdvice(findings: readonly Finding[]): string {
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
