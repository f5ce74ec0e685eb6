/**
 * The real Supabase CLI (npm's `supabase`, which carries its binary; .ci/run installs the version
 * below into .cache/) on this repository: it reads supabase/config.toml with no warning, and
 * `supabase functions deploy --use-api` uploads each function's module graph, as `deno info`
 * resolves it, plus import_map.json, and nothing else. The CLI works out that list itself, by
 * matching import statements in the source text, so a comment that reads like an import makes it
 * look for a file. The deploy goes to a stand-in Management API on loopback (a profile file points
 * the CLI there) that records each upload and refuses the dummy token: no code leaves the machine,
 * and the run ends at the same place on every machine. The CLI gets a throwaway HOME and must leave
 * supabase/ as it found it. Skipped, saying so, where the CLI is not installed, except under
 * CI=true, where that fails.
 */
import assert from "node:assert/strict";
import { FUNCTION_NAMES } from "./support/function-names.ts";
import { OLDER_DENO_VERSION } from "./support/older-deno.ts";

/** Keep equal to SUPABASE_CLI_VERSION in .ci/run. */
const SUPABASE_CLI_VERSION = "3.1.0";
const PREFIX = `.cache/supabase-cli-${SUPABASE_CLI_VERSION}`;
const INSTALL = `npm install --prefix ${PREFIX} --no-save --no-package-lock --no-audit --no-fund ` +
  `supabase@${SUPABASE_CLI_VERSION}`;
const ROOT = new URL("../", import.meta.url);
const LAUNCHER = new URL(`${PREFIX}/node_modules/.bin/supabase`, ROOT).pathname;
/** A well-formed project ref (20 lowercase letters); the stand-in API is the only one that sees it. */
const PROJECT_REF = "walletvaultdeploychk";
/** The deploy ends at the stand-in's first answer; this only bounds a CLI that hangs. */
const CLI_TIMEOUT_MS = 60_000;
const IMPORT_MAP = "import_map.json";

interface CliResult {
  readonly success: boolean;
  readonly lines: string[];
}

/**
 * Runs the CLI with a throwaway HOME (it keeps state under ~/.supabase), only the environment named
 * here (no SUPABASE_* setting of the caller's applies), telemetry off and no stdin.
 */
async function runCli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const home = await Deno.makeTempDir({ prefix: "supabase-cli-home-" });
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), CLI_TIMEOUT_MS);
  try {
    const output = await new Deno.Command(LAUNCHER, {
      args,
      cwd: ROOT.pathname,
      clearEnv: true,
      env: {
        // The launcher is a Node script that starts the binary.
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        HOME: home,
        NO_COLOR: "1",
        SUPABASE_TELEMETRY_DISABLED: "1",
        DO_NOT_TRACK: "1",
        SUPABASE_NO_KEYRING: "1",
        // Its release check fetches from the network and caches the answer in supabase/.temp.
        SUPABASE_NO_UPDATE_NOTIFIER: "1",
        ...env,
      },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: abort.signal,
    }).output();
    if (abort.signal.aborted) {
      throw new Error(`supabase ${args.join(" ")} ran over ${CLI_TIMEOUT_MS / 1000} s`);
    }
    const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
    return {
      success: output.success,
      lines: text.split("\n").map((line) => line.trimEnd()).filter((line) => line !== ""),
    };
  } finally {
    clearTimeout(timer);
    await Deno.remove(home, { recursive: true });
  }
}

/** Why the CLI at the pinned version cannot run here, or nothing when it can. */
async function whyCliMissing(): Promise<string | undefined> {
  try {
    const { success, lines } = await runCli(["--version"]);
    if (success && lines.at(-1) === SUPABASE_CLI_VERSION) return undefined;
    return `supabase --version answered ${JSON.stringify(lines.join(" "))}`;
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    return `${LAUNCHER} is missing`;
  }
}

/** The entries of supabase/, where the CLI keeps project state (supabase/.temp) when it writes any. */
async function projectFolder(): Promise<string[]> {
  const names = [];
  for await (const entry of Deno.readDir(new URL("supabase/", ROOT))) names.push(entry.name);
  return names.sort();
}

// Before the CLI first runs here.
const projectBefore = await projectFolder();
const inCi = Deno.env.get("CI") === "true";
const missing = await whyCliMissing();
if (missing && !inCi) {
  console.warn(
    `tests/supabase_cli_test.ts skipped: Supabase CLI ${SUPABASE_CLI_VERSION} is not installed ` +
      `(${missing}; ${INSTALL}).`,
  );
}

interface Upload {
  readonly metadata: Record<string, unknown>;
  readonly files: string[];
}

interface DeployRun extends CliResult {
  /** What the stand-in Management API received, by function slug. */
  readonly uploads: Map<string, Upload>;
}

/**
 * A Management API on loopback: records each function upload (its metadata and the name of every
 * file in the multipart body) and answers every request 401, as the real one answers a dummy token.
 */
function standInApi() {
  const uploads = new Map<string, Upload>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const url = new URL(request.url);
    const slug = url.searchParams.get("slug");
    if (request.method === "POST" && url.pathname.endsWith("/functions/deploy") && slug) {
      const form = await request.formData();
      uploads.set(slug, {
        metadata: JSON.parse(String(form.get("metadata"))),
        files: form.getAll("file").map((file) => (file as File).name),
      });
    } else {
      await request.body?.cancel();
    }
    return Response.json({ message: "Unauthorized" }, { status: 401 });
  });
  return { uploads, url: `http://127.0.0.1:${server.addr.port}`, close: () => server.shutdown() };
}

/** `supabase functions deploy --use-api` of every function in config.toml, against the stand-in. */
async function deployToStandIn(): Promise<DeployRun> {
  const api = standInApi();
  const dir = await Deno.makeTempDir({ prefix: "supabase-cli-profile-" });
  try {
    const profile = `${dir}/loopback.json`;
    await Deno.writeTextFile(
      profile,
      JSON.stringify({
        name: "loopback",
        api_url: api.url,
        dashboard_url: api.url,
        project_host: "localhost",
      }),
    );
    const token = `sbp_${
      Array.from(crypto.getRandomValues(new Uint8Array(20)), (byte) => byte.toString(16))
        .map((hex) => hex.padStart(2, "0")).join("")
    }`;
    const result = await runCli(
      [
        "functions",
        "deploy",
        "--use-api",
        "--yes",
        "--agent=no",
        `--workdir=${ROOT.pathname}`,
        `--profile=${profile}`,
        `--remote=${PROJECT_REF}`,
      ],
      { SUPABASE_ACCESS_TOKEN: token, SUPABASE_API_MAX_RETRIES: "0" },
    );
    return { ...result, uploads: api.uploads };
  } finally {
    await api.close();
    await Deno.remove(dir, { recursive: true });
  }
}

// One deploy serves every test below: it is the slow part, and each test reads a different aspect.
let deployRun: Promise<DeployRun> | undefined;
function deploy(): Promise<DeployRun> {
  if (missing) {
    throw new Error(
      `CI=true but Supabase CLI ${SUPABASE_CLI_VERSION} is not installed (${missing}; ${INSTALL})`,
    );
  }
  return deployRun ??= deployToStandIn();
}

/** The repository files in `deno info`'s module graph of a function's entrypoint. */
async function localModuleGraph(name: string): Promise<string[]> {
  const { success, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", `functions/${name}/index.ts`],
    cwd: ROOT.pathname,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(success, new TextDecoder().decode(stderr));
  const graph: { modules: { specifier: string }[] } = JSON.parse(new TextDecoder().decode(stdout));
  const local = graph.modules.map((module) => module.specifier).filter((specifier) =>
    specifier.startsWith("file:")
  );
  for (const specifier of local) assert.ok(specifier.startsWith(ROOT.href), specifier);
  return local.map((specifier) => decodeURI(specifier.slice(ROOT.href.length)));
}

const DEPLOYING = /^Deploying Function: (\S+)$/;
const UPLOADING = /^Uploading asset \(([^)]+)\): (\S+)$/;
/** Every line a clean deploy prints, up to the stand-in's refusal; anything else is a finding. */
const EXPECTED_LINES = [
  new RegExp(`^Target: project ${PROJECT_REF}$`),
  new RegExp(`^Confirmed by --yes: Deploy ${FUNCTION_NAMES.length} Functions on project `),
  DEPLOYING,
  UPLOADING,
  /^unexpected deploy status 401: /,
  /^Try rerunning the command with --debug to troubleshoot the error\.$/,
];

Deno.test("supabase/config.toml names the Deno major the functions are tested on", async () => {
  const text = await Deno.readTextFile(new URL("supabase/config.toml", ROOT));
  const section = /^\[edge_runtime\][ \t]*\n((?:(?!\[).*\n?)*)/m.exec(text);
  assert.ok(section, "supabase/config.toml has no [edge_runtime] section");
  const declared = /^deno_version[ \t]*=[ \t]*(\d+)[ \t]*(?:#.*)?$/m.exec(section[1]);
  assert.ok(declared, "[edge_runtime] in supabase/config.toml sets no deno_version");
  assert.equal(
    Number(declared[1]),
    Number(OLDER_DENO_VERSION.split(".")[0]),
    `the functions are tested on Deno ${OLDER_DENO_VERSION} (tests/older_runtime_test.ts)`,
  );
  assert.equal(
    Number(declared[1]),
    Number(Deno.version.deno.split(".")[0]),
    `the test suite runs the functions on Deno ${Deno.version.deno}`,
  );
});

Deno.test({
  name: "the Supabase CLI reads supabase/config.toml and deploys every function with no warning",
  ignore: Boolean(missing) && !inCi,
  async fn() {
    const run = await deploy();
    const unexpected = run.lines.filter((line) =>
      !EXPECTED_LINES.some((shape) => shape.test(line))
    );
    assert.deepEqual(
      unexpected,
      [],
      `the CLI printed more than the deploy:\n${unexpected.join("\n")}`,
    );
    const deployed = run.lines.flatMap((line) => DEPLOYING.exec(line)?.[1] ?? []);
    assert.deepEqual(deployed.toSorted(), [...FUNCTION_NAMES].sort());
    // Each function's upload reached the network (the stand-in), where the dummy token ends it.
    assert.deepEqual([...run.uploads.keys()].sort(), [...FUNCTION_NAMES].sort());
    assert.equal(run.success, false);
    assert.deepEqual(await projectFolder(), projectBefore, "the CLI wrote into supabase/");
  },
});

for (const name of FUNCTION_NAMES) {
  Deno.test({
    name:
      `the Supabase CLI uploads the ${name} function's module graph and ${IMPORT_MAP}, nothing else`,
    ignore: Boolean(missing) && !inCi,
    async fn() {
      const run = await deploy();
      const expected = [...await localModuleGraph(name), IMPORT_MAP].sort();
      const listed = run.lines.flatMap((line) => {
        const match = UPLOADING.exec(line);
        return match?.[1] === name ? [match[2]] : [];
      });
      assert.deepEqual(listed.sort(), expected, "the files the CLI lists for upload");
      const upload = run.uploads.get(name);
      assert.ok(upload, `the stand-in API received no upload of ${name}`);
      assert.deepEqual(upload.files.toSorted(), expected, "the files the upload carries");
      // As supabase/config.toml says: its entrypoint and import map, and no gateway JWT check.
      const { entrypoint_path, import_map_path, verify_jwt } = upload.metadata;
      assert.deepEqual(
        { entrypoint_path, import_map_path, verify_jwt },
        {
          entrypoint_path: `functions/${name}/index.ts`,
          import_map_path: IMPORT_MAP,
          verify_jwt: false,
        },
      );
    },
  });
}
