/**
 * The client package (`@wallet-vault/client`, built from sdk/) as its users consume it: packed with
 * `npm pack`, installed by npm into scratch projects made at test time (a stock Vite vanilla-ts app
 * from a pinned create-vite, a Node.js project, a Deno program over node_modules), each with a
 * committed lockfile for its own dependencies, and run against the local app on a real port. The
 * examples in docs/frontends.md and docs/live-run.md marked `package=<id>` are the code they run.
 */
import assert from "node:assert/strict";
import { atEdge, LOCAL_ANON_KEY } from "../server/app.ts";
import { bearer, newWallet, type SignedIn, signIn, startTestApp } from "./support/app.ts";
import { inCi, launchChromium, openPage, skipWithoutChromium } from "./support/chromium.ts";
import { injectWallet } from "./support/injected-wallet.ts";
import { packSdk } from "./support/packed-sdk.ts";
import { installLine } from "./support/walkthrough.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const CONSUMERS = `${ROOT}tests/consumers`;
const DOCUMENTED_BASE = "http://127.0.0.1:54321";
/** The scaffolder of the Vite app; its template's dependencies are in consumers/vite-vanilla. */
const CREATE_VITE = "create-vite@9.3.0";
/**
 * Node.js releases from npm (`npx -y node@…`). This machine's node stands for Node 20 when it is a
 * 20; else node@20.9.0 (the npm package's last 20.x) does.
 */
const NODE_20 = "node@20.9.0";
const OTHER_NODES = ["node@22.23.3", "node@24.9.0"];
const NPM_FLAGS = ["--no-audit", "--no-fund", "--prefer-offline"];
/** Every install, build or run; generous, for a cold npm cache. */
const COMMAND_TIMEOUT_MS = 5 * 60_000;

const SUBPATHS = [".", "./browser", "./server", "./rainbowkit", "./appkit-siwx"];

// ---------------------------------------------------------------------------------------------
// Commands

interface Output {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

async function run(
  command: string,
  args: string[],
  options: { cwd: string; env?: Record<string, string> },
): Promise<Output> {
  const result = await new Deno.Command(command, {
    args,
    cwd: options.cwd,
    env: { NO_COLOR: "1", npm_config_update_notifier: "false", ...options.env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(COMMAND_TIMEOUT_MS),
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: result.code, stdout: decode(result.stdout), stderr: decode(result.stderr) };
}

/** Runs a command that must succeed; its output. */
async function mustRun(
  command: string,
  args: string[],
  options: { cwd: string; env?: Record<string, string> },
): Promise<Output> {
  const output = await run(command, args, options);
  assert.equal(
    output.code,
    0,
    `${command} ${args.join(" ")} (in ${options.cwd}) exited ${output.code}:\n` +
      `${output.stdout}\n${output.stderr}`,
  );
  return output;
}

// ---------------------------------------------------------------------------------------------
// The documented examples

/** Each ```lang package=<id> block of docs/*.md, by id. */
async function packageExamples(): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  for await (const entry of Deno.readDir(`${ROOT}docs`)) {
    if (!entry.name.endsWith(".md")) continue;
    const lines = (await Deno.readTextFile(`${ROOT}docs/${entry.name}`)).split("\n");
    for (let i = 0; i < lines.length; i++) {
      const id = lines[i].match(/^```\w+\s.*\bpackage=(\S+)/)?.[1];
      if (id === undefined) continue;
      const end = lines.indexOf("```", i + 1);
      assert.ok(end > i, `docs/${entry.name}:${i + 1}: unclosed block`);
      assert.ok(!found.has(id), `two examples named package=${id}`);
      found.set(id, lines.slice(i + 1, end).join("\n") + "\n");
      i = end;
    }
  }
  return found;
}

const EXAMPLES = await packageExamples();

function example(id: string, origin: string): string {
  const code = EXAMPLES.get(id);
  assert.ok(code !== undefined, `no docs example marked package=${id}`);
  return code.replaceAll(DOCUMENTED_BASE, origin);
}

/** No value, nor any 12-character piece of one, appears in `text`. */
function assertNoSecretIn(text: string, values: readonly string[], where: string): void {
  for (const value of values) {
    for (let i = 0; i + 12 <= value.length; i++) {
      assert.ok(!text.includes(value.slice(i, i + 12)), `part of a key value found in ${where}`);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The service, the built page and a stand-in image provider on one loopback port

interface ProviderCall {
  readonly provider: string;
  readonly authorization: string | null;
}

interface Served {
  readonly origin: string;
  readonly revealToken: string;
  readonly providerCalls: ProviderCall[];
  /** Serves this directory's files (a Vite build) at `/`. */
  servePage(dir: string): void;
  signInCreator(): Promise<SignedIn>;
  save(creator: SignedIn, secretType: string, value: string): Promise<void>;
  reveal(accessToken: string): Promise<Record<string, string>>;
  close(): Promise<void>;
}

const CONTENT_TYPES: Record<string, string> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript",
  css: "text/css",
  svg: "image/svg+xml",
  png: "image/png",
};

async function serve(): Promise<Served> {
  let handler: Deno.ServeHandler<Deno.NetAddr> = () => new Response(null, { status: 503 });
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request, info) => handler(request, info),
  );
  const origin = `http://127.0.0.1:${server.addr.port}`;
  // Sign-in messages are bound to the page's origin, which CORS lets in.
  const app = await startTestApp("pglite", { ALLOWED_ORIGINS: origin });
  const edge = atEdge(app.app.handler, app.config.clientIp);
  const providerCalls: ProviderCall[] = [];
  let pageDir: string | null = null;
  handler = async (request, info) => {
    const path = new URL(request.url).pathname;
    if (path.startsWith("/api/") || path.startsWith("/functions/v1/")) return edge(request, info);
    const provider = path.match(/^\/provider\/([a-z_]+)\/images$/)?.[1];
    if (provider !== undefined && request.method === "POST") {
      await request.body?.cancel();
      providerCalls.push({ provider, authorization: request.headers.get("authorization") });
      return Response.json({ url: `https://images.example/${crypto.randomUUID()}.png` });
    }
    if (pageDir === null || request.method !== "GET" || path.includes("..")) {
      return new Response("not found", { status: 404 });
    }
    const file = path === "/" ? "/index.html" : path;
    try {
      const body = await Deno.readFile(`${pageDir}${file}`);
      const type = CONTENT_TYPES[file.split(".").pop() ?? ""] ?? "application/octet-stream";
      return new Response(body, { headers: { "content-type": type } });
    } catch {
      return new Response("not found", { status: 404 });
    }
  };
  return {
    origin,
    revealToken: app.config.serverRevealToken,
    providerCalls,
    servePage(dir) {
      pageDir = dir;
    },
    signInCreator: () => signIn(app, newWallet()),
    async save(creator, secretType, value) {
      const response = await app.fetch("/api/secrets", {
        method: "PUT",
        headers: bearer(creator.accessToken, { "content-type": "application/json" }),
        body: JSON.stringify({ secretType, value }),
      });
      assert.equal(response.status, 200, await response.text());
    },
    async reveal(accessToken) {
      const response = await app.fetch("/api/secrets/reveal", {
        method: "POST",
        headers: bearer(accessToken, {
          "x-service-server-secret": app.config.serverRevealToken,
          "content-type": "application/json",
        }),
        body: "{}",
      });
      assert.equal(response.status, 200);
      const { secrets } = await response.json() as {
        secrets: { secretType: string; value: string }[];
      };
      return Object.fromEntries(secrets.map((s) => [s.secretType, s.value]));
    },
    async close() {
      await server.shutdown();
      await app.close();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Scratch projects

/** A page's install line (```sh package=<id>), run as written with the tarball for the package. */
function installAsThePageSays(id: string, dir: string, tarball: string): Promise<void> {
  const code = EXAMPLES.get(id);
  assert.ok(code !== undefined, `no install line marked package=${id}`);
  return installLine({ lang: "sh", id, file: null, line: 0, code }, dir, tarball);
}

/** `npm ci` of the test's own tools from a committed lockfile, then the page's install line. */
async function installOverLock(
  dir: string,
  tarball: string,
  installLine: string,
): Promise<void> {
  await mustRun("npm", ["ci", ...NPM_FLAGS], { cwd: dir });
  await installAsThePageSays(installLine, dir, tarball);
}

/** The stock vanilla-ts app from the pinned create-vite, with the docs' page as src/main.ts. */
async function viteApp(scratch: string, tarball: string, origin: string): Promise<string> {
  await mustRun("npx", ["-y", CREATE_VITE, "app", "--template", "vanilla-ts", "--no-interactive"], {
    cwd: scratch,
  });
  const dir = `${scratch}/app`;
  await Deno.copyFile(`${CONSUMERS}/vite-vanilla/package-lock.json`, `${dir}/package-lock.json`);
  await installOverLock(dir, tarball, "vite-install");
  await Deno.writeTextFile(`${dir}/src/main.ts`, example("vite-main", origin));
  await Deno.writeTextFile(`${dir}/.env`, `VITE_VAULT_API=${origin}/api\n`);
  return dir;
}

/** A Node.js project (consumers/node) with the docs' live-run server and job. */
async function nodeProject(scratch: string, tarball: string, origin: string): Promise<string> {
  const dir = `${scratch}/node`;
  await Deno.mkdir(dir);
  for (const file of ["package.json", "package-lock.json"]) {
    await Deno.copyFile(`${CONSUMERS}/node/${file}`, `${dir}/${file}`);
  }
  await installOverLock(dir, tarball, "node-install");
  await Deno.writeTextFile(`${dir}/server.mjs`, example("node-live-run", origin));
  await Deno.writeTextFile(`${dir}/reveal-job.cjs`, example("node-job", origin));
  await Deno.writeTextFile(
    `${dir}/tsconfig.json`,
    JSON.stringify({
      compilerOptions: {
        module: "nodenext",
        target: "es2022",
        allowJs: true,
        checkJs: true,
        strict: true,
        noEmit: true,
        skipLibCheck: false,
        types: ["node"],
      },
      files: ["server.mjs", "reveal-job.cjs"],
    }),
  );
  // CommonJS as TypeScript 5 resolves it by default (node10: no `exports`; typesVersions instead).
  // The declarations themselves are checked by the config above.
  await Deno.writeTextFile(
    `${dir}/tsconfig.node10.json`,
    JSON.stringify({
      compilerOptions: {
        module: "commonjs",
        moduleResolution: "node10",
        target: "es2022",
        allowJs: true,
        checkJs: true,
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        types: ["node"],
      },
      files: ["reveal-job.cjs"],
    }),
  );
  return dir;
}

/** What a Node run of the docs' supabase-js module prints: the masked list, then a refusal. */
const SUPABASE_DRIVER = `
const listed = await listKeys(process.env.TOKEN);
let refused = null;
try {
  await listKeys("not-a-session");
} catch (error) {
  refused = { name: error.constructor.name, code: error.code, status: error.status };
}
console.log(JSON.stringify({
  secretTypes: listed.map((secret) => secret.secretType),
  values: listed.some((secret) => "value" in secret),
  refused,
}));
`;

/** A fresh Node.js project: the page's supabase-js install line and module (frontends.md). */
async function nodeSupabaseProject(
  scratch: string,
  tarball: string,
  origin: string,
): Promise<string> {
  const dir = `${scratch}/node-supabase`;
  await Deno.mkdir(dir);
  await Deno.writeTextFile(`${dir}/package.json`, JSON.stringify({ private: true }));
  await installAsThePageSays("node-supabase-install", dir, tarball);
  await Deno.writeTextFile(
    `${dir}/keys.mjs`,
    example("node-supabase-js", origin) + SUPABASE_DRIVER,
  );
  return dir;
}

/** What the Deno run prints last, after the docs' step example. */
const DENO_DRIVER = `
const token = Deno.env.get("TOKEN")!;
const video = await credentialsForVideo(token);
if ("error" in video) throw new Error(video.error.code);
const image = await vault.credentialsForStep(token, "image");
const stored = await vault.reveal(token);
console.log(String(video), Deno.inspect(image), JSON.stringify(stored));
const value = Deno.env.get("PROVIDER_B_VALUE");
console.log(JSON.stringify({
  video: video.provider,
  image: image.provider,
  matches: video.get("provider_b_key") === value && image.get("provider_b_key") === value,
  stored: stored.secretTypes,
}));
`;

/** A Deno program over an npm install of the package (`"nodeModulesDir": "manual"`). */
async function denoProject(scratch: string, tarball: string, origin: string): Promise<string> {
  const dir = `${scratch}/deno`;
  await Deno.mkdir(dir);
  // The page's install line (live-run.md's), as for Node.js.
  await installAsThePageSays("node-install", dir, tarball);
  await Deno.writeTextFile(`${dir}/deno.json`, JSON.stringify({ nodeModulesDir: "manual" }));
  await Deno.writeTextFile(`${dir}/main.ts`, example("deno-live-run", origin) + DENO_DRIVER);
  return dir;
}

/** The executable of each Node.js release (20, 22, 24), by its version, or why it is missing. */
async function nodeExecutables(scratch: string): Promise<Map<string, string | Error>> {
  const found = new Map<string, string | Error>();
  const own = await mustRun("node", ["-p", "process.version + ' ' + process.execPath"], {
    cwd: scratch,
  });
  const [version, path] = own.stdout.trim().split(" ");
  const fromNpm = [...OTHER_NODES];
  if (version.startsWith("v20.")) found.set(`node ${version} (this machine's)`, path);
  else fromNpm.unshift(NODE_20);
  await Promise.all(fromNpm.map(async (release) => {
    const located = await run("npx", ["-y", release, "-p", "process.execPath"], { cwd: scratch });
    found.set(
      release,
      located.code === 0
        ? located.stdout.trim()
        : new Error(`npx -y ${release} failed: ${located.stderr.trim().split("\n").pop()}`),
    );
  }));
  return found;
}

/**
 * What lies under `folder` that git does not track (ignored or not), but the build's output and the
 * build tools: what a build would have left in the sources.
 */
async function filesGitDoesNotTrack(folder: string): Promise<string[]> {
  const { stdout } = await mustRun("git", ["ls-files", "--others", "--directory", "--", folder], {
    cwd: ROOT,
  });
  return stdout.split("\n").filter((path) =>
    path !== "" && path !== `${folder}/dist/` && path !== `${folder}/node_modules/`
  ).sort();
}

// ---------------------------------------------------------------------------------------------
// A long-running process: its port, then everything it printed once stopped

interface Running {
  readonly url: string;
  stop(): Promise<string>;
}

async function startNodeServer(
  node: string,
  dir: string,
  env: Record<string, string>,
): Promise<Running> {
  const child = new Deno.Command(node, {
    args: ["server.mjs"],
    cwd: dir,
    env: { ...env, PORT: "0" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let output = "";
  let url: string | undefined;
  while (url === undefined) {
    const { done, value } = await reader.read();
    if (done) {
      await child.status;
      throw new Error(`server.mjs exited before listening:\n${output}\n${await stderr}`);
    }
    output += value;
    url = output.match(/live-run server on (http:\/\/127\.0\.0\.1:\d+)/)?.[1];
  }
  const rest = (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      output += value;
    }
  })();
  return {
    url,
    async stop() {
      child.kill("SIGTERM");
      await child.status;
      await rest;
      return `${output}\n${await stderr}`;
    },
  };
}

// ---------------------------------------------------------------------------------------------

Deno.test("the package's manifest: ESM and CommonJS per subpath with types, Node 20+, no dependencies, MIT", async () => {
  const manifest = JSON.parse(await Deno.readTextFile(`${ROOT}sdk/package.json`));
  assert.equal(manifest.name, "@wallet-vault/client");
  assert.match(manifest.version, /^\d+\.\d+\.\d+$/);
  assert.equal(manifest.type, "module");
  assert.equal(manifest.sideEffects, false);
  assert.deepEqual(manifest.engines, { node: ">=20" });
  assert.equal(manifest.license, "MIT");
  assert.match(await Deno.readTextFile(`${ROOT}LICENSE`), /^MIT License\n/);
  assert.equal(manifest.dependencies, undefined, "no runtime dependency");
  for (const peer of Object.keys(manifest.peerDependencies ?? {})) {
    assert.deepEqual(manifest.peerDependenciesMeta?.[peer], { optional: true }, peer);
  }
  for (const [name, version] of Object.entries(manifest.devDependencies)) {
    assert.match(String(version), /^\d+\.\d+\.\d+$/, `${name} is pinned exactly`);
  }
  assert.deepEqual(Object.keys(manifest.exports), [...SUBPATHS, "./package.json"]);
  for (const subpath of SUBPATHS) {
    const base = subpath === "." ? "./dist/index" : `./dist/${subpath.slice(2)}`;
    assert.deepEqual(manifest.exports[subpath], {
      import: { types: `${base}.d.ts`, default: `${base}.js` },
      require: { types: `${base}.d.cts`, default: `${base}.cjs` },
    });
  }
});

Deno.test({
  name:
    "the packed package, installed by npm into projects made at test time, against the local server",
  // PGlite and the HTTP server keep timers and sockets between steps by design.
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const besideTheBuild = await filesGitDoesNotTrack("sdk");
    const tarball = await packSdk();
    const served = await serve();
    const { origin } = served;
    const scratch = await Deno.makeTempDir({ prefix: "wallet-vault-consumers-" });
    const creator = await served.signInCreator();
    const values = {
      provider_a_org_id: `org-${crypto.randomUUID()}`,
      provider_b_key: `sk-b-${crypto.randomUUID()}-${crypto.randomUUID()}`,
    };
    for (const [type, value] of Object.entries(values)) await served.save(creator, type, value);
    const env = {
      VAULT_URL: `${origin}/functions/v1`,
      SERVER_REVEAL_TOKEN: served.revealToken,
      PROVIDER_API: `${origin}/provider`,
    };
    // Installs and downloads at once; each step below awaits the one it needs.
    const settle = <T>(work: Promise<T>) => {
      work.catch(() => {}); // reported by the step that awaits it
      return work;
    };
    const vite = settle(viteApp(scratch, tarball, origin));
    const nodeApp = settle(nodeProject(scratch, tarball, origin));
    const nodeSupabase = settle(nodeSupabaseProject(scratch, tarball, origin));
    const deno = settle(denoProject(scratch, tarball, origin));
    const nodes = settle(nodeExecutables(scratch));

    try {
      await t.step(
        "the build wrote nothing in sdk/ outside sdk/dist/ (and npm's node_modules/)",
        async () => {
          assert.deepEqual(await filesGitDoesNotTrack("sdk"), besideTheBuild);
        },
      );

      await t.step(
        "the tarball holds the build and the license, and the build imports nothing from the repository",
        async () => {
          const listed = (await mustRun("tar", ["-tzf", tarball], { cwd: scratch })).stdout
            .trim().split("\n").sort();
          const outside = listed.filter((path) =>
            !/^package\/(package\.json|README\.md|dist\/(LICENSE|[\w.-]+\.(js|cjs|d\.ts|d\.cts)))$/
              .test(path)
          );
          assert.deepEqual(outside, []);
          assert.ok(listed.includes("package/dist/LICENSE"));
          const dist = `${await nodeApp}/node_modules/@wallet-vault/client/dist`;
          const manifest = JSON.parse(await Deno.readTextFile(`${dist}/../package.json`));
          const peers = new Set(Object.keys(manifest.peerDependencies ?? {}));
          let relative = 0;
          for await (const entry of Deno.readDir(dist)) {
            if (entry.name === "LICENSE") continue;
            const text = await Deno.readTextFile(`${dist}/${entry.name}`);
            const specifiers = [
              ...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\(\s*)["']([^"']+)["']/g),
            ].map((match) => match[1]);
            for (const specifier of specifiers) {
              if (specifier.startsWith(".")) {
                relative++;
                assert.match(specifier, /^\.\/[\w.-]+$/, `${entry.name} imports ${specifier}`);
                const target = specifier.slice(2).replace(/\.c?js$/, "");
                const exists = listed.some((path) => path.startsWith(`package/dist/${target}.`));
                assert.ok(
                  exists,
                  `${entry.name} imports ${specifier}, which is not in the package`,
                );
              } else {
                const name = specifier.match(/^(@[^/]+\/[^/]+|[^/]+)/)![1];
                assert.ok(
                  peers.has(name),
                  `${entry.name} imports ${specifier}, not a declared peer`,
                );
              }
            }
          }
          // The entries reach their shared chunks: the walk above saw the imports it checks.
          assert.ok(relative > 10, `only ${relative} relative imports found in dist/`);
        },
      );

      const page = `${scratch}/page`;
      await t.step(
        "the stock Vite vanilla-ts template's `tsc && vite build` passes with the docs' page",
        async () => {
          const dir = await vite;
          await mustRun("npm", ["run", "build"], { cwd: dir });
          await Deno.rename(`${dir}/dist`, page);
          served.servePage(page);
        },
      );

      await t.step(
        "the same sources build with exactOptionalPropertyTypes and skipLibCheck: false, and with strict: false",
        async () => {
          const dir = await vite;
          const stock = await Deno.readTextFile(`${dir}/tsconfig.json`);
          assert.match(stock, /"skipLibCheck": true,/);
          const variants = {
            exact: stock.replace(
              /"skipLibCheck": true,/,
              `"skipLibCheck": false, "exactOptionalPropertyTypes": true, "strict": true,`,
            ),
            loose: stock.replace(/"skipLibCheck": true,/, `"skipLibCheck": true, "strict": false,`),
          };
          try {
            for (const tsconfig of Object.values(variants)) {
              await Deno.writeTextFile(`${dir}/tsconfig.json`, tsconfig);
              await mustRun("npm", ["run", "build"], { cwd: dir });
            }
          } finally {
            await Deno.writeTextFile(`${dir}/tsconfig.json`, stock);
          }
        },
      );

      await t.step({
        name:
          "in Chromium, the built page signs in with an injected wallet and saves a key shown masked, no console error",
        ignore: skipWithoutChromium("tests/package_test.ts: the Chromium step"),
        async fn() {
          await Deno.stat(`${page}/index.html`); // built by the step above
          const browser = await launchChromium();
          try {
            const context = await browser.newContext();
            const wallet = await injectWallet(context, newWallet());
            const { page: tab, pageErrors } = await openPage(context);
            const consoleErrors: string[] = [];
            tab.on("console", (message) => {
              if (message.type() === "error") consoleErrors.push(message.text());
            });
            await tab.goto(origin);
            await tab.getByRole("button", { name: "Connect wallet" }).click();
            await tab.locator("#status", { hasText: "Signed in as" }).waitFor();
            const shown = (await tab.locator("#status").textContent())!;
            assert.equal(
              shown.toLowerCase(),
              `signed in as ${wallet.account.address}`.toLowerCase(),
            );
            assert.equal(wallet.signed.length, 1);
            assert.ok(wallet.signed[0].startsWith(`${new URL(origin).host} wants you to sign in`));

            const value = `sk-b-page-${crypto.randomUUID()}-${crypto.randomUUID()}`;
            await tab.locator("#value").fill(value);
            await tab.getByRole("button", { name: "Save" }).click();
            await tab.locator("#status", { hasText: "Saved provider_b_key." }).waitFor();
            await tab.locator("#keys li", { hasText: `provider_b_key …${value.slice(-4)}` })
              .waitFor();
            const contents = await tab.evaluate<string>(`[
              document.documentElement.outerHTML,
              ...Array.from(document.querySelectorAll("input"), (input) => input.value),
              JSON.stringify({ ...localStorage }),
            ].join("\\n")`);
            assertNoSecretIn(contents, [value], "the page after saving");
            // Saved for this creator: their session, from the page's storage, reveals it.
            const stored = JSON.parse(
              await tab.evaluate<string>(
                `Object.entries(localStorage).find(([k]) => k.startsWith("wallet-vault.session:"))[1]`,
              ),
            );
            assert.deepEqual(await served.reveal(stored.accessToken), { provider_b_key: value });
            assert.deepEqual(pageErrors, []);
            assert.deepEqual(consoleErrors, [], "the console shows an error");
          } finally {
            await browser.close();
          }
        },
      });

      const executables = await nodes;
      for (const [release, node] of executables) {
        const missing = node instanceof Error ? node : null;
        if (missing !== null && !inCi) {
          console.warn(`tests/package_test.ts: ${release} skipped: ${missing.message}`);
        }
        await t.step({
          name:
            `on ${release}, the docs' ESM live-run server and CommonJS job route an image step and print no key`,
          ignore: missing !== null && !inCi,
          async fn() {
            if (node instanceof Error) throw node;
            const dir = await nodeApp;
            const version = (await mustRun(node, ["--version"], { cwd: dir })).stdout.trim();
            const expected = [`node@${version.slice(1)}`, `node ${version} (this machine's)`];
            assert.ok(expected.includes(release), `${release} runs ${version}`);

            const calls = served.providerCalls.length;
            const server = await startNodeServer(node, dir, env);
            let printed = "";
            try {
              const runStep = (authorization?: string) =>
                fetch(`${server.url}/runs`, {
                  method: "POST",
                  headers: authorization ? { authorization } : {},
                  body: JSON.stringify({ prompt: "a lighthouse at dusk" }),
                });
              const answer = await runStep(`Bearer ${creator.accessToken}`);
              const body = await answer.text();
              assert.equal(answer.status, 200, body);
              assert.equal(JSON.parse(body).provider, "provider_b");
              assertNoSecretIn(body, Object.values(values), "the live-run answer");
              const refused = await runStep("Bearer not-a-session");
              assert.equal(refused.status, 401);
              assert.equal((await refused.json()).error.code, "invalid_token");
            } finally {
              printed = await server.stop();
            }
            assert.match(
              printed,
              /StepCredentials\(image via provider_b: provider_b_key; values \[redacted\]\)/,
            );

            const job = await mustRun(node, ["reveal-job.cjs"], {
              cwd: dir,
              env: { ...env, SESSION_TOKEN: creator.accessToken },
            });
            assert.match(
              job.stdout,
              /RevealedSecrets\(provider_a_org_id, provider_b_key; values \[redacted\]\)/,
            );
            assert.match(job.stdout, /image via provider_b: 200/);
            assertNoSecretIn(printed + job.stdout + job.stderr, Object.values(values), release);
            // Each reached the provider with the creator's provider B key, and with nothing else.
            assert.deepEqual(served.providerCalls.slice(calls), [
              { provider: "provider_b", authorization: `Bearer ${values.provider_b_key}` },
              { provider: "provider_b", authorization: `Bearer ${values.provider_b_key}` },
            ]);

            // One VaultError across subpaths in each format, and importing changes no global.
            const same = "a.VaultError === b.VaultError && b.VaultError === c.VaultError";
            const cjs = await mustRun(node, [
              "-p",
              `const g = Object.keys(globalThis).length; const a = require("@wallet-vault/client"), ` +
              `b = require("@wallet-vault/client/server"), c = require("@wallet-vault/client/browser"); ` +
              `require("@wallet-vault/client/rainbowkit"); require("@wallet-vault/client/appkit-siwx"); ` +
              `${same} && Object.keys(globalThis).length === g`,
            ], { cwd: dir });
            assert.equal(cjs.stdout.trim(), "true");
            const esm = await mustRun(node, [
              "--input-type=module",
              "-e",
              `const g = Object.keys(globalThis).length; const [a, b, c] = await Promise.all(` +
              `["", "/server", "/browser", "/rainbowkit", "/appkit-siwx"].map((p) => ` +
              `import("@wallet-vault/client" + p))); console.log(${same} && ` +
              `Object.keys(globalThis).length === g)`,
            ], { cwd: dir });
            assert.equal(esm.stdout.trim(), "true");
          },
        });
      }

      for (const [release, node] of executables) {
        await t.step({
          name:
            `on ${release}, the docs' supabase-js module lists a creator's keys through functions.invoke (ws as WebSocket)`,
          ignore: node instanceof Error && !inCi,
          async fn() {
            if (node instanceof Error) throw node;
            const dir = await nodeSupabase;
            const { stdout, stderr } = await mustRun(node, ["keys.mjs"], {
              cwd: dir,
              env: {
                SUPABASE_URL: origin,
                SUPABASE_ANON_KEY: LOCAL_ANON_KEY,
                TOKEN: creator.accessToken,
              },
            });
            assert.deepEqual(JSON.parse(stdout.trim().split("\n").pop()!), {
              secretTypes: ["provider_a_org_id", "provider_b_key"],
              values: false,
              refused: { name: "VaultError", code: "invalid_token", status: 401 },
            });
            assert.doesNotMatch(stderr, /WebSocket/);
          },
        });
      }

      await t.step(
        "`tsc` type-checks the ESM server and the CommonJS job (module nodenext), and the job as node10 CommonJS",
        async () => {
          const dir = await nodeApp;
          for (const config of ["tsconfig.json", "tsconfig.node10.json"]) {
            await mustRun(`${dir}/node_modules/.bin/tsc`, ["-p", config], { cwd: dir });
          }
        },
      );

      await t.step(
        "a Deno program over the npm install (nodeModulesDir manual) runs the docs' step example",
        async () => {
          const dir = await deno;
          const { stdout, stderr } = await mustRun(
            Deno.execPath(),
            ["run", "--check", "--allow-net", "--allow-env", "--allow-read", "main.ts"],
            {
              cwd: dir,
              env: {
                ...env,
                TOKEN: creator.accessToken,
                PROVIDER_B_VALUE: values.provider_b_key,
              },
            },
          );
          const last = stdout.trim().split("\n").pop()!;
          assert.deepEqual(JSON.parse(last), {
            video: "provider_b",
            image: "provider_b",
            matches: true,
            stored: ["provider_a_org_id", "provider_b_key"],
          });
          assert.match(stdout, /\[redacted\]/);
          assertNoSecretIn(stdout + stderr, Object.values(values), "the Deno program's output");
        },
      );
    } finally {
      await Promise.allSettled([vite, nodeApp, nodeSupabase, deno, nodes]);
      await served.close();
      await Deno.remove(scratch, { recursive: true });
    }
  },
});
