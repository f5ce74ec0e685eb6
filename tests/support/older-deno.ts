/**
 * An older Deno to run the deployed functions with: a 2.1 release (V8 13.0), the line Supabase's
 * Edge Runtime followed in 2025, from npm into .cache/ (.ci/run installs it: OLDER_DENO_INSTALL).
 * It gets its own DENO_DIR and lockfile, since its cache and lockfile formats are older than this
 * Deno's.
 */
import { FUNCTION_NAMES } from "./function-names.ts";

export const OLDER_DENO_VERSION = "2.1.4";
const PREFIX = `.cache/deno-${OLDER_DENO_VERSION}`;
/** As .ci/run installs it. */
export const OLDER_DENO_INSTALL = `npm install --prefix ${PREFIX} --no-save --no-package-lock ` +
  `--no-audit --no-fund deno@${OLDER_DENO_VERSION}`;

const ROOT = new URL("../../", import.meta.url);
const FUNCTION_ENTRIES = FUNCTION_NAMES.map((name) => `functions/${name}/index.ts`);

export interface OlderDeno {
  /** The native executable. */
  readonly deno: string;
  readonly denoDir: string;
  /**
   * Its lockfile, written when it cached the functions. A deployed function is a bundle whose npm
   * packages were resolved when it was deployed; without a lockfile, every start would resolve
   * them again from the registry's metadata.
   */
  readonly lockfile: string;
}

/** How the functions run on `runtime`: from the versions its lockfile holds, never others. */
export const lockedTo = (runtime: OlderDeno) => [`--lock=${runtime.lockfile}`, "--frozen"];

/** Runs `command`; one that cannot even be started (not installed) is a failure, not a throw. */
async function run(command: string, args: string[], env: Record<string, string>) {
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes).trim();
  try {
    const result = await new Deno.Command(command, {
      args,
      cwd: ROOT.pathname,
      env: { ...env, DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    return {
      success: result.success,
      stdout: decode(result.stdout),
      stderr: decode(result.stderr),
    };
  } catch (error) {
    return { success: false, stdout: "", stderr: String(error) };
  }
}

/**
 * The installed older Deno with the functions' modules already in its cache (downloaded here once,
 * so an instance starts as fast as on this Deno), or why there is none.
 */
export async function findOlderDeno(): Promise<{ found: OlderDeno } | { missing: string }> {
  const launcher = new URL(`${PREFIX}/node_modules/.bin/deno`, ROOT).pathname;
  const denoDir = new URL(`${PREFIX}/deno-dir`, ROOT).pathname;
  const lockfile = new URL(`${PREFIX}/deno.lock`, ROOT).pathname;
  // The npm registry's certificate authority, when this machine uses its own: for the downloads
  // below only (the functions then load everything from the cache).
  const cert = Deno.env.get("DENO_CERT") ?? Deno.env.get("SSL_CERT_FILE");
  const env: Record<string, string> = cert ? { DENO_CERT: cert } : {};
  const located = await run(
    launcher,
    ["eval", "--no-lock", "console.log(Deno.execPath(), Deno.version.deno)"],
    { ...env, DENO_DIR: denoDir },
  );
  const [deno, version] = located.stdout.split(" ");
  if (!located.success || version !== OLDER_DENO_VERSION) {
    return { missing: `Deno ${OLDER_DENO_VERSION} is not installed (${OLDER_DENO_INSTALL})` };
  }
  const cached = await run(deno, ["cache", `--lock=${lockfile}`, ...FUNCTION_ENTRIES], {
    ...env,
    DENO_DIR: denoDir,
  });
  // Installed but unable to fetch the functions' packages (offline, say): a failure, not a skip.
  if (!cached.success) {
    throw new Error(`Deno ${version} could not cache the functions:\n${cached.stderr}`);
  }
  return { found: { deno, denoDir, lockfile } };
}
