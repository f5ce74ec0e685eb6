/**
 * `deno task sign-in` (scripts/dev-sign-in.ts): a shell gets a real session from a running server
 * with one `eval`, and every exported value works as the docs' curl examples use it: TOKEN for the
 * vault, REFRESH_TOKEN for a refresh, PROOF for one more sign-in of the same wallet.
 */
import assert from "node:assert/strict";
import { atEdge } from "../server/app.ts";
import { freePort } from "./support/ports.ts";
import { bearer, type TestApp } from "./support/app.ts";
import { describeWithDatabase } from "./support/suite.ts";

const SCRIPT = new URL("../scripts/dev-sign-in.ts", import.meta.url).pathname;

async function run(command: string, args: string[], env: Record<string, string> = {}) {
  const result = await new Deno.Command(command, { args, env, stdout: "piped", stderr: "piped" })
    .output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: result.code, stdout: decode(result.stdout), stderr: decode(result.stderr) };
}

/** The script as its task runs it (deno.json: --allow-net --allow-env=PORT). */
const signIn = (...args: string[]) =>
  run(Deno.execPath(), ["run", "--allow-net", "--allow-env=PORT", SCRIPT, ...args]);

describeWithDatabase("deno task sign-in", {
  "exports a session, a refresh token and an unused proof that a shell can use as they are": async (
    app: TestApp,
  ) => {
    await using server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      atEdge(app.app.handler, app.config.clientIp),
    );
    const signedIn = await signIn(`http://127.0.0.1:${server.addr.port}/`);
    assert.equal(signedIn.code, 0, signedIn.stderr);
    assert.match(signedIn.stderr, /as 0x[0-9a-fA-F]{40} \(a new throwaway wallet\)/);
    // Through a real shell's eval, so the quoting is what a user's shell sees.
    const shell = await run("bash", [
      "-c",
      `eval "$EXPORTS"; printf '%s\\0' "$TOKEN" "$ACCESS_TOKEN" "$REFRESH_TOKEN" "$PROOF"`,
    ], { EXPORTS: signedIn.stdout });
    assert.equal(shell.code, 0, shell.stderr);
    const [token, accessToken, refreshToken, proof] = shell.stdout.split("\0");
    assert.equal(accessToken, token);

    const list = await app.fetch("/api/secrets", { headers: bearer(token) });
    assert.equal(list.status, 200);
    assert.deepEqual((await list.json()).secrets, []);

    const again = await app.fetch("/api/auth/wallet-proof", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: proof,
    });
    assert.equal(again.status, 200);
    const session = await app.context.sessions.verifyToken(token);
    assert.equal((await again.json()).user.wallet_address, session.walletAddress);

    const refreshed = await app.fetch("/api/auth/refresh", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ refresh_token: refreshToken }),
    });
    assert.equal(refreshed.status, 200);
  },

  "says in one line that nothing answers, and exports nothing": async () => {
    const refused = await signIn(`http://127.0.0.1:${freePort()}`);
    assert.equal(refused.code, 1);
    assert.equal(refused.stdout, "");
    assert.match(
      refused.stderr,
      /^sign-in: no answer from http:\/\/127\.0\.0\.1:\d+ \(.+\): is the server/,
    );
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
    const refused = await signIn(`http://127.0.0.1:${server.addr.port}`);
    assert.equal(refused.code, 1);
    assert.equal(refused.stdout, "");
    assert.match(refused.stderr, /^sign-in: the sign-in answer has no usable access_token\n$/);
  },
});
