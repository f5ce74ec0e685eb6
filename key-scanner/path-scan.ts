/**
 * Reading files and directories for the key scanner: links followed only inside the tree being
 * walked, each real file read once, and the report made with fingerprints and the allow-list.
 */
import { createHash } from "node:crypto";
import type { AllowList } from "./allow.ts";
import { longRunReason, scanBytes } from "./byte-scan.ts";
import { amend, type Finding, fingerprintOf } from "./finding.ts";

/** A file or blob not read, and why; `source` as a finding's ("staged", "commit <sha>"). */
export interface Skipped {
  file: string;
  readonly reason: string;
  readonly source?: string;
  /** A base64 or hex run in a file that was read, too long to decode. */
  readonly longRun?: boolean;
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

/** Scanning state shared by a run: what was read (by real path), found and skipped. */
export class PathScan {
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
    const { findings, binary, longRuns } = await scanBytes(chunks, path);
    this.#read.add(path);
    if (binary) {
      this.skipped.push({ file: path, reason: "binary" });
      return;
    }
    this.filesScanned++;
    for (const run of longRuns) {
      this.skipped.push({ file: path, reason: longRunReason(run), longRun: true });
    }
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
