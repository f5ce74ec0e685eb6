/**
 * `deno task sign-in` (scripts/dev-sign-in.ts): a shell gets a real session from a running server
 * with one `eval`, and every exported value works as the docs' curl examples use it: BASE for the
 * URL, TOKEN for the vault, OTHER_DEVICE_TOKEN as a second device's session of the same wallet,
 * REFRESH_TOKEN for a refresh, PROOF for one more sign-in of the same wallet, and, from a server in
 * development on this machine, SERVER_REVEAL_TOKEN from its development keys.
 */
import assert from "node:assert/strict";
import { atEdge } from "../server/app.ts";
import { generateDevKeys } from "../server/dev-keys.ts";
import { freePort } from "./support/ports.ts";
import { bearer, type TestApp } from "./support/app.ts";
import { describeWithDatabase } from "./support/suite.ts";

const ROOT = new URL("../", import.meta.url);
const SCRIPT = "scripts/dev-sign-in.ts";

/** The task's own flags, read from deno.json, so the test runs what `deno task sign-in` runs. */
const TASK_FLAGS = (() => {
  const config = JSON.parse(Deno.readTextFileSync(new URL("deno.json", ROOT)));
  const [deno, run, ...rest] = String(config.tasks["sign-in"]).split(/\s+/);
  assert.deepEqual([deno, run, rest.at(-1)], ["deno", "run", SCRIPT]);
  return rest.slice(0, -1);
})();

const EXPORTED = [
  "BASE",
  "TOKEN",
  "ACCESS_TOKEN",
  "REFRESH_TOKEN",
  "OTHER_DEVICE_TOKEN",
  "PROOF",
  "SERVER_REVEAL_TOKEN",
] as const;

async function run(
  command: string,
  args: string[],
  options: { env?: Record<string, string>; cwd?: string } = {},
) {
  const result = await new Deno.Command(command, {
    args,
    env: options.env,
    cwd: options.cwd,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: result.code, stdout: decode(result.stdout), stderr: decode(result.stderr) };
}

/**
 * The script with the task's permissions, in `cwd` (the task runs in the repository, where the
 * local server keeps .local/dev-keys.json; here a directory of the test's own).
 */
const signIn = (
  options: { cwd: string; env?: Record<string, string> },
  ...args: string[]
) =>
  run(Deno.execPath(), [
    "run",
    "--config",
    new URL("deno.json", ROOT).pathname,
    ...TASK_FLAGS,
    new URL(SCRIPT, ROOT).pathname,
    ...args,
  ], options);

/** A working directory for the script, with development keys holding `revealToken` if given. */
async function workDir(revealToken?: string): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "dev-sign-in-" });
  if (revealToken !== undefined) {
    await Deno.mkdir(`${dir}/.local`);
    await Deno.writeTextFile(
      `${dir}/.local/dev-keys.json`,
      JSON.stringify({ ...generateDevKeys(), SERVER_REVEAL_TOKEN: revealToken }),
    );
  }
  return dir;
}

/** Every variable the script may export, as a shell sees them after `eval` (unset as null). */
async function evaluated(
  exports: string,
): Promise<Record<(typeof EXPORTED)[number], string | null>> {
  const shell = await run("bash", [
    "-c",
    `unset ${EXPORTED.join(" ")}; eval "$EXPORTS"; ` +
    `for name in ${EXPORTED.join(" ")}; do printf '%s=%s\\0' "$name" "\${!name-<unset>}"; done`,
  ], { env: { EXPORTS: exports } });
  assert.equal(shell.code, 0, shell.stderr);
  const pairs = shell.stdout.split("\0").filter(Boolean).map((pair) => {
    const at = pair.indexOf("=");
    const value = pair.slice(at + 1);
    return [pair.slice(0, at), value === "<unset>" ? null : value];
  });
  return Object.fromEntries(pairs);
}

interface Seen {
  url: string;
  revealToken: boolean;
}

/** The edge the local server puts in front of the app, on a random loopback port. */
function serve(app: TestApp, seen: Seen[] = []) {
  const edge = atEdge(app.app.handler, app.config.clientIp);
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request, info) => {
    seen.push({ url: request.url, revealToken: request.headers.has("x-service-server-secret") });
    return edge(request, info);
  });
}

describeWithDatabase("deno task sign-in", {
  "exports the URL, a session, a second device's session, a refresh token and an unused proof that a shell can use as they are":
    async (app: TestApp) => {
      await using server = serve(app);
      const base = `http://127.0.0.1:${server.addr.port}`;
      const cwd = await workDir();
      try {
        const signedIn = await signIn({ cwd }, `${base}/`);
        assert.equal(signedIn.code, 0, signedIn.stderr);
        assert.match(signedIn.stderr, /as 0x[0-9a-fA-F]{40} \(a new throwaway wallet\)/);
        // Through a real shell's eval, so the quoting is what a user's shell sees.
        const shell = await evaluated(signedIn.stdout);
        assert.equal(shell.BASE, base);
        assert.equal(shell.ACCESS_TOKEN, shell.TOKEN);
        const token = shell.TOKEN!;

        const list = await app.fetch("/api/secrets", { headers: bearer(token) });
        assert.equal(list.status, 200);
        assert.deepEqual((await list.json()).secrets, []);

        // Another session of the same wallet: a global logout from it ends the first one too.
        const session = await app.context.sessions.checkToken(token);
        const other = await app.context.sessions.checkToken(shell.OTHER_DEVICE_TOKEN!);
        assert.equal(other.userId, session.userId);
        assert.notEqual(other.sessionId, session.sessionId);

        const again = await app.fetch("/api/auth/wallet-proof", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: shell.PROOF!,
        });
        assert.equal(again.status, 200);
        assert.equal((await again.json()).user.wallet_address, session.walletAddress);

        const refreshed = await app.fetch("/api/auth/refresh", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ refresh_token: shell.REFRESH_TOKEN }),
        });
        assert.equal(refreshed.status, 200);

        // No development keys here: no reveal token, and the reason in one line.
        assert.equal(shell.SERVER_REVEAL_TOKEN, null);
        assert.match(
          signedIn.stderr,
          /\nsign-in: SERVER_REVEAL_TOKEN not set: no \.local\/dev-keys\.json here\n$/,
        );
      } finally {
        await Deno.remove(cwd, { recursive: true });
      }
    },

  "removes the throwaway wallets' keys kept for more than 30 days, and nothing else": async (
    app: TestApp,
  ) => {
    await using server = serve(app);
    const cwd = await workDir();
    try {
      const dir = `${cwd}/.local/sign-in-wallets`;
      await Deno.mkdir(dir, { recursive: true });
      const day = 86_400_000;
      const kept = async (name: string, ageDays: number) => {
        await Deno.writeTextFile(`${dir}/${name}`, "{}\n");
        const at = new Date(Date.now() - ageDays * day);
        await Deno.utime(`${dir}/${name}`, at, at);
      };
      const stale = `0x${"a1".repeat(20)}.json`;
      const recent = `0x${"b2".repeat(20)}.json`;
      await kept(stale, 31);
      await kept(recent, 29);
      await kept(`0x${"C3".repeat(20)}.json`, 400); // not a name the sign-in writes
      await kept("notes.txt", 400);

      const signedIn = await signIn({ cwd }, `http://127.0.0.1:${server.addr.port}`);
      assert.equal(signedIn.code, 0, signedIn.stderr);
      assert.match(
        signedIn.stderr,
        /removed 1 throwaway wallet key\(s\) older than 30 days from \.local\/sign-in-wallets/,
      );
      const wallet = signedIn.stdout.match(/^export SIGN_IN_WALLET='(0x[0-9a-fA-F]{40})'$/m)![1];
      const left = (await Array.fromAsync(Deno.readDir(dir))).map((entry) => entry.name).sort();
      assert.deepEqual(
        left,
        [`${wallet.toLowerCase()}.json`, recent, `0x${"C3".repeat(20)}.json`, "notes.txt"].sort(),
      );

      // Nothing old left: the next sign-in says nothing about removing.
      const again = await signIn({ cwd }, `http://127.0.0.1:${server.addr.port}`);
      assert.equal(again.code, 0, again.stderr);
      assert.doesNotMatch(again.stderr, /removed/);
    } finally {
      await Deno.remove(cwd, { recursive: true });
    }
  },

  "takes BASE from PORT when no URL is given": async (app: TestApp) => {
    await using server = serve(app);
    const cwd = await workDir();
    try {
      const signedIn = await signIn({ cwd, env: { PORT: String(server.addr.port) } });
      assert.equal(signedIn.code, 0, signedIn.stderr);
      assert.equal((await evaluated(signedIn.stdout)).BASE, `http://127.0.0.1:${server.addr.port}`);
    } finally {
      await Deno.remove(cwd, { recursive: true });
    }
  },

  "exports the development keys' reveal token when the server takes it, and it reveals": async (
    app: TestApp,
  ) => {
    await using server = serve(app);
    const cwd = await workDir(app.config.serverRevealToken);
    try {
      const signedIn = await signIn({ cwd }, `http://127.0.0.1:${server.addr.port}`);
      assert.equal(signedIn.code, 0, signedIn.stderr);
      assert.match(signedIn.stderr, /SERVER_REVEAL_TOKEN set from \.local\/dev-keys\.json/);
      assert.doesNotMatch(signedIn.stderr, new RegExp(app.config.serverRevealToken));
      const shell = await evaluated(signedIn.stdout);
      assert.equal(shell.SERVER_REVEAL_TOKEN, app.config.serverRevealToken);

      const saved = await app.fetch("/api/secrets", {
        method: "PUT",
        headers: bearer(shell.TOKEN!, { "content-type": "application/json" }),
        body: JSON.stringify({ secretType: "provider_c_key", value: "sk-dev-sign-in-example" }),
      });
      assert.equal(saved.status, 200);
      const revealed = await app.fetch("/api/secrets/reveal", {
        method: "POST",
        headers: bearer(shell.TOKEN!, { "x-service-server-secret": shell.SERVER_REVEAL_TOKEN! }),
      });
      assert.equal(revealed.status, 200);
      assert.deepEqual(
        (await revealed.json()).secrets.map((s: { value: string }) => s.value),
        ["sk-dev-sign-in-example"],
      );
    } finally {
      await Deno.remove(cwd, { recursive: true });
    }
  },

  "exports no reveal token the server refuses (its keys are not the development keys)": async (
    app: TestApp,
  ) => {
    await using server = serve(app);
    const cwd = await workDir(generateDevKeys().SERVER_REVEAL_TOKEN);
    try {
      const signedIn = await signIn({ cwd }, `http://127.0.0.1:${server.addr.port}`);
      assert.equal(signedIn.code, 0, signedIn.stderr);
      assert.equal((await evaluated(signedIn.stdout)).SERVER_REVEAL_TOKEN, null);
      assert.match(
        signedIn.stderr,
        /SERVER_REVEAL_TOKEN not set: the server does not take the one in \.local\/dev-keys\.json/,
      );
    } finally {
      await Deno.remove(cwd, { recursive: true });
    }
  },

  "never sends the development keys to a server that is not on this machine": async (
    app: TestApp,
  ) => {
    // A named host reached through a loopback proxy: the request leaves as it would for a real one.
    const seen: Seen[] = [];
    await using proxy = serve(app, seen);
    const cwd = await workDir(app.config.serverRevealToken);
    try {
      const signedIn = await signIn(
        { cwd, env: { HTTP_PROXY: `http://127.0.0.1:${proxy.addr.port}`, NO_PROXY: "" } },
        "http://vault.example.test",
      );
      assert.equal(signedIn.code, 0, signedIn.stderr);
      // Both sessions and the proof's nonce went through the proxy, and nothing else did.
      assert.deepEqual(seen.map((request) => new URL(request.url).pathname), [
        "/api/auth/nonce",
        "/api/auth/wallet-proof",
        "/api/auth/nonce",
        "/api/auth/wallet-proof",
        "/api/auth/nonce",
      ]);
      assert.ok(seen.every((request) => new URL(request.url).host === "vault.example.test"));
      assert.ok(seen.every((request) => !request.revealToken));
      const shell = await evaluated(signedIn.stdout);
      assert.equal(shell.BASE, "http://vault.example.test");
      assert.equal(shell.SERVER_REVEAL_TOKEN, null);
      assert.match(
        signedIn.stderr,
        /SERVER_REVEAL_TOKEN not set: http:\/\/vault\.example\.test is not on this machine/,
      );
    } finally {
      await Deno.remove(cwd, { recursive: true });
    }
  },

  "says in one line that nothing answers, and exports nothing": async () => {
    const cwd = await workDir();
    try {
      const refused = await signIn({ cwd }, `http://127.0.0.1:${freePort()}`);
      assert.equal(refused.code, 1);
      assert.equal(refused.stdout, "");
      assert.match(
        refused.stderr,
        /^sign-in: no answer from http:\/\/127\.0\.0\.1:\d+ \(the URL given after sign-in; .+\): is the server/,
      );
      // Both ways to name another server: PORT, as for the server, and the URL argument.
      assert.match(refused.stderr, /set PORT as for the server \(PORT=8000 deno task sign-in\)/);
      assert.match(refused.stderr, /give its URL \(deno task sign-in http:\/\/127\.0\.0\.1:8000\)/);
      assert.equal(refused.stderr.trimEnd().split("\n").length, 1);

      const byPort = await signIn({ cwd, env: { PORT: String(freePort()) } });
      assert.equal(byPort.code, 1);
      assert.match(byPort.stderr, /^sign-in: no answer from http:\/\/127\.0\.0\.1:\d+ \(PORT; /);
    } finally {
      await Deno.remove(cwd, { recursive: true });
    }
  },

  "defines vault_sign, which signs the creator's acts with the wallet's key kept in .local/sign-in-wallets and nowhere else":
    async (app: TestApp) => {
      await using server = serve(app);
      // In the repository, as `deno task sign-in` and the helper's `deno task sign-act` run.
      const signedIn = await signIn({ cwd: ROOT.pathname }, `http://127.0.0.1:${server.addr.port}`);
      assert.equal(signedIn.code, 0, signedIn.stderr);
      const exports = await evaluated(signedIn.stdout);
      const wallet = (signedIn.stdout.match(/^export SIGN_IN_WALLET='(0x[0-9a-fA-F]{40})'$/m) ??
        [])[1];
      assert.ok(wallet, signedIn.stdout);
      const keyFile = new URL(`.local/sign-in-wallets/${wallet.toLowerCase()}.json`, ROOT);
      try {
        const { privateKey } = JSON.parse(await Deno.readTextFile(keyFile));
        assert.equal((await Deno.stat(keyFile)).mode! & 0o777, 0o600);
        assert.ok(!signedIn.stdout.includes(privateKey.slice(2)), "the key is printed");
        assert.ok(!signedIn.stderr.includes(privateKey.slice(2)), "the key is printed");

        // The helper as the page uses it: in the shell the sign-in's output was evaluated in.
        const shell = await run("bash", [
          "-c",
          `set -euo pipefail
npx() { shift 2; "$DENO" "$@"; }
eval "$EXPORTS"
vault_sign unlock
vault_sign sign_out_sessions "{\\"sessionIds\\":[\\"$OTHER_DEVICE_SESSION_ID\\"]}"`,
        ], { env: { EXPORTS: signedIn.stdout, DENO: Deno.execPath() }, cwd: "/tmp" });
        assert.equal(shell.code, 0, shell.stderr);
        assert.ok(
          !shell.stdout.includes(privateKey.slice(2)) &&
            !shell.stderr.includes(privateKey.slice(2)),
        );
        const [unlock, signOut] = shell.stdout.trim().split("\n").map((line) => JSON.parse(line));
        assert.deepEqual(Object.keys(unlock), ["message", "signature"]);
        assert.match(unlock.message, /Unlock live-run access/);

        const unlocked = await app.fetch("/api/secrets/unlock", {
          method: "POST",
          headers: bearer(exports.TOKEN!, { "content-type": "application/json" }),
          body: JSON.stringify(unlock),
        });
        assert.equal(unlocked.status, 200);
        assert.deepEqual(await unlocked.json(), { locked: false });
        const other = await app.context.sessions.checkToken(exports.OTHER_DEVICE_TOKEN!);
        assert.deepEqual(signOut.sessionIds, [other.sessionId]);
        const signedOut = await app.fetch("/api/auth/sessions/sign-out", {
          method: "POST",
          headers: bearer(exports.TOKEN!, { "content-type": "application/json" }),
          body: JSON.stringify(signOut),
        });
        assert.equal(signedOut.status, 200);
        assert.deepEqual(await signedOut.json(), { signedOut: 1 });
      } finally {
        await Deno.remove(keyFile).catch(() => {});
      }
    },

  "exports nothing from an answer that holds no real tokens": async (app: TestApp) => {
    // A server that passes the nonce through but answers the proof with what no token looks like.
    const edge = atEdge(app.app.handler, app.config.clientIp);
    await using server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      (request, info) =>
        new URL(request.url).pathname.endsWith("/wallet-proof")
          ? Response.json({ access_token: "x'; touch /tmp/owned; '", refresh_token: "r" })
          : edge(request, info),
    );
    const cwd = await workDir();
    try {
      const refused = await signIn({ cwd }, `http://127.0.0.1:${server.addr.port}`);
      assert.equal(refused.code, 1);
      assert.equal(refused.stdout, "");
      assert.match(refused.stderr, /^sign-in: the sign-in answer has no usable access_token\n$/);
    } finally {
      await Deno.remove(cwd, { recursive: true });
    }
  },
});
