/**
 * The client package as its users get it: built and packed with the real task (`deno task
 * sdk:pack`: `npm ci` of the build tools, tsup, `npm pack`), once per test process. Test files
 * install the tarball into scratch projects, so what they prove holds for the published files, not
 * for sdk/'s sources.
 */

const ROOT = new URL("../../", import.meta.url).pathname;

let packed: Promise<string> | null = null;

/** The absolute path of the packed `@wallet-vault/client` tarball (built once per process). */
export function packSdk(): Promise<string> {
  packed ??= build().catch((error) => {
    packed = null;
    throw error;
  });
  return packed;
}

/**
 * Runs `work` while no other process on this checkout builds the package: sdk/node_modules and
 * sdk/dist are shared by every test process (two test runs at once), and a build replaces them.
 */
async function withSdkBuildLock<T>(work: () => Promise<T>): Promise<T> {
  await Deno.mkdir(`${ROOT}.cache`, { recursive: true });
  using lock = await Deno.open(`${ROOT}.cache/sdk-build.lock`, { create: true, write: true });
  await lock.lock(true);
  try {
    return await work();
  } finally {
    await lock.unlock();
  }
}

function build(): Promise<string> {
  return withSdkBuildLock(async () => {
    // The documented way (docs/frontends.md): the tarball lands in the repository's root, and is
    // copied to a directory of this process's own.
    await run(Deno.execPath(), ["task", "-q", "sdk:pack"], ROOT);
    const { version } = JSON.parse(await Deno.readTextFile(`${ROOT}sdk/package.json`));
    const filename = `wallet-vault-client-${version}.tgz`;
    const destination = await Deno.makeTempDir({ prefix: "wallet-vault-client-" });
    await Deno.copyFile(`${ROOT}${filename}`, `${destination}/${filename}`);
    return `${destination}/${filename}`;
  });
}

/** Runs a command, npm's notices off; its stdout, or a throw that shows both streams. */
export async function run(
  command: string,
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
): Promise<string> {
  const result = await new Deno.Command(command, {
    args,
    cwd,
    env: { NO_COLOR: "1", npm_config_update_notifier: "false", ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  if (!result.success) {
    throw new Error(
      `${command} ${args.join(" ")} (in ${cwd}) failed:\n${decode(result.stdout)}\n${
        decode(result.stderr)
      }`,
    );
  }
  return decode(result.stdout);
}
