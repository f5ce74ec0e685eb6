/**
 * The embedded database's directory is private to its owner: created 0700, and a directory left
 * readable (PGlite writes its files 0666) is narrowed on every start. The local server's own use
 * of it, with a real PGlite, is in local_server_test.ts.
 */
import assert from "node:assert/strict";
import { DataDirInUse, lockDataDir, realDataDir, secureDataDir } from "../server/data-dir.ts";

const modeOf = async (path: string) => (await Deno.lstat(path)).mode! & 0o777;

async function withTempDir(work: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "wallet-vault-data-dir-" });
  try {
    await work(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a readable data directory is narrowed to 0700, its directories 0700 and its files 0600", async () => {
  await withTempDir(async (root) => {
    const data = `${root}/pglite`;
    // The shape PGlite leaves: nested directories and files everyone can read and write.
    await Deno.mkdir(`${data}/base/1`, { recursive: true });
    await Deno.mkdir(`${data}/pg_wal`);
    const files = [`${data}/PG_VERSION`, `${data}/base/1/1259`, `${data}/pg_wal/000000010000`];
    for (const file of files) {
      await Deno.writeTextFile(file, "wallet 0xabc…");
      await Deno.chmod(file, 0o666);
    }
    await Deno.writeTextFile(`${data}/postmaster.opts`, "x");
    await Deno.chmod(`${data}/postmaster.opts`, 0o755);
    for (const dir of [data, `${data}/base`, `${data}/base/1`, `${data}/pg_wal`]) {
      await Deno.chmod(dir, 0o777);
    }

    const report = await secureDataDir(data);

    assert.equal(report.created, false);
    for (const dir of [data, `${data}/base`, `${data}/base/1`, `${data}/pg_wal`]) {
      assert.equal(await modeOf(dir), 0o700, dir);
    }
    for (const file of files) assert.equal(await modeOf(file), 0o600, file);
    // Only group and other bits go: an owner's execute bit stays.
    assert.equal(await modeOf(`${data}/postmaster.opts`), 0o700);
    assert.equal(report.tightened, 4 + files.length + 1);
    // Already private: a second start changes nothing.
    assert.equal((await secureDataDir(data)).tightened, 0);
  });
});

Deno.test("a missing data directory is created 0700 whatever the umask", async () => {
  await withTempDir(async (root) => {
    const previous = Deno.umask(0);
    try {
      const data = `${root}/nested/pglite`;
      const report = await secureDataDir(data);
      assert.equal(report.created, true);
      assert.equal(await modeOf(data), 0o700);
    } finally {
      Deno.umask(previous);
    }
  });
});

Deno.test("links inside the data directory are not followed out of it", async () => {
  await withTempDir(async (root) => {
    const data = `${root}/pglite`;
    await Deno.mkdir(data);
    const outside = `${root}/outside`;
    await Deno.mkdir(outside);
    await Deno.chmod(outside, 0o755);
    await Deno.writeTextFile(`${outside}/shared.txt`, "not the database's");
    await Deno.chmod(`${outside}/shared.txt`, 0o644);
    await Deno.symlink(outside, `${data}/linked-dir`);
    await Deno.symlink(`${outside}/shared.txt`, `${data}/linked-file`);

    await secureDataDir(data);

    assert.equal(await modeOf(data), 0o700);
    assert.equal(await modeOf(outside), 0o755);
    assert.equal(await modeOf(`${outside}/shared.txt`), 0o644);
  });
});

Deno.test("a data directory path that is a file is refused", async () => {
  await withTempDir(async (root) => {
    const file = `${root}/pglite`;
    await Deno.writeTextFile(file, "");
    await assert.rejects(secureDataDir(file), /is not a directory/);
  });
});

Deno.test("a link to the data directory is the directory: resolved, and sharing its lock", async () => {
  await withTempDir(async (root) => {
    const data = `${root}/pglite`;
    await Deno.mkdir(data);
    await Deno.symlink(data, `${root}/link`);
    assert.equal(await realDataDir(`${root}/link`), await Deno.realPath(data));
    assert.equal(await realDataDir(`${root}/not-yet`), `${await Deno.realPath(root)}/not-yet`);
    // Held for the life of the process, as the server holds it; the link must find it taken.
    await lockDataDir(data);
    await assert.rejects(() => lockDataDir(`${root}/link`), DataDirInUse);
  });
});
