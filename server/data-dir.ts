/**
 * The embedded database's directory, readable by its owner only.
 *
 * PGlite writes its files mode 0666 whatever the umask (the modes of its in-memory filesystem are
 * copied to disk), and the WAL holds wallet addresses and key hints in clear. A directory of mode
 * 0700 keeps every other local user out of all of it, including files PGlite creates later; the
 * files are tightened to 0600 as well, so a copy of the directory does not carry 0666 along.
 */
import { resolve } from "node:path";

export interface DataDirReport {
  /** The directory did not exist and was created. */
  readonly created: boolean;
  /** Directories and files whose mode had to be narrowed (the top directory included). */
  readonly tightened: number;
}

/** Unix permission bits are all this changes; Windows has none to set. */
export const HAS_MODES = Deno.build.os !== "windows";

/**
 * Creates `path` (mode 0700) if missing, then sets it and every directory below it to 0700 and
 * takes the group and other bits off every file (PGlite's 0666 becomes 0600). Symbolic links are
 * left alone and not followed. Throws when the modes
 * cannot be set (for example a directory owned by another user): the server must not start then.
 */
export async function secureDataDir(path: string): Promise<DataDirReport> {
  let created = false;
  try {
    await Deno.mkdir(path, { mode: 0o700 });
    created = true;
  } catch (error) {
    if (!(error instanceof Deno.errors.AlreadyExists)) {
      // Parents missing: create them too (their modes are the umask's; only the leaf holds data).
      if (!(error instanceof Deno.errors.NotFound)) throw error;
      await Deno.mkdir(path, { recursive: true, mode: 0o700 });
      created = true;
    }
  }
  const info = await Deno.stat(path);
  if (!info.isDirectory) throw new Error(`${path} is not a directory.`);
  if (!HAS_MODES) return { created, tightened: 0 };
  try {
    return { created, tightened: await tighten(path, info.mode) };
  } catch (error) {
    throw new Error(
      `Could not make ${path} private (mode 0700): ${(error as Error).message}`,
      { cause: error },
    );
  }
}

async function tighten(dir: string, mode: number | null): Promise<number> {
  let tightened = 0;
  // The directory first: from here on nobody else can open what is below it.
  if (mode === null || (mode & 0o777) !== 0o700) {
    await Deno.chmod(dir, 0o700);
    tightened++;
  }
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isSymlink) continue;
    const path = `${dir}/${entry.name}`;
    try {
      if (entry.isDirectory) {
        tightened += await tighten(path, (await Deno.lstat(path)).mode);
      } else if (entry.isFile) {
        const fileMode = (await Deno.lstat(path)).mode;
        if (fileMode === null || (fileMode & 0o077) !== 0) {
          await Deno.chmod(path, fileMode === null ? 0o600 : fileMode & 0o700);
          tightened++;
        }
      }
    } catch (error) {
      // A running database removes files (old WAL segments) while this walks: nothing to do.
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
  return tightened;
}

/** How long to wait for another process to let go of the directory before refusing. */
const LOCK_WAIT_MS = 250;

/** The embedded database is open in another process (the local server, or vault:rotate). */
export class DataDirInUse extends Error {
  constructor(path: string) {
    super(
      `${path} is open in another process (the local server or vault:rotate); stop it first: ` +
        "PGlite allows one process per data directory.",
    );
    this.name = "DataDirInUse";
  }
}

/**
 * The directory's own path, links resolved: PGlite cannot open its files through a symbolic link,
 * and a link must share the lock of what it points to. A directory not made yet is only resolved.
 */
export async function realDataDir(path: string): Promise<string> {
  try {
    return await Deno.realPath(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return resolve(path);
    throw error;
  }
}

/**
 * Holds an exclusive lock on `<path>.lock` (beside the directory, so PGlite's own files are left
 * alone) for the life of the process, which releases it on exit however it ends. Two processes on
 * one directory would each keep their own copy of the database in memory and write over the
 * other's changes. Throws DataDirInUse when another process holds it.
 */
export async function lockDataDir(path: string): Promise<void> {
  // Resolved, so `pglite`, `./pglite`, `pglite/` and a link to it are one lock, never one inside
  // the directory.
  const file = await Deno.open(`${await realDataDir(path)}.lock`, {
    create: true,
    write: true,
    mode: 0o600,
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const waited = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), LOCK_WAIT_MS);
  });
  // Deno has no non-blocking lock: a lock still pending after the wait is left to the exit.
  const locked = await Promise.race([file.lock(true).then(() => true), waited]);
  clearTimeout(timer);
  if (!locked) throw new DataDirInUse(path);
}
