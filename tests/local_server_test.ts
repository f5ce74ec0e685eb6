/**
 * `deno task start` as a process, on embedded PGlite in a fresh directory: its data directory is
 * private from the first start and after any later one, and its socket applies the LOCAL_* limits.
 */
import assert from "node:assert/strict";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { isLiveRunCredential } from "../functions/_shared/auth/live-run-credential-format.ts";
import { INHERITED, startLocalServer } from "./support/local-server.ts";

/** Every path below `dir` (links not followed) with its permission bits. */
async function modes(dir: string): Promise<Map<string, number>> {
  const found = new Map<string, number>([[dir, (await Deno.lstat(dir)).mode! & 0o777]]);
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) {
      for (const [p, m] of await modes(path)) found.set(p, m);
    } else if (entry.isFile) {
      found.set(path, (await Deno.lstat(path)).mode! & 0o777);
    }
  }
  return found;
}

function assertPrivate(found: Map<string, number>): void {
  const open = [...found].filter(([, mode]) => (mode & 0o077) !== 0);
  assert.deepEqual(
    open.slice(0, 5).map(([path, mode]) => `${path} ${mode.toString(8)}`),
    [],
    `${open.length} of ${found.size} paths are readable by others`,
  );
}

async function readUntilClosed(conn: Deno.Conn): Promise<string> {
  let received = "";
  const buffer = new Uint8Array(4096);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const safety = new Promise<"open">((resolve) => {
    timer = setTimeout(() => resolve("open"), 15_000);
  });
  const reading = (async () => {
    for (;;) {
      const n = await conn.read(buffer).catch(() => null);
      if (n === null) return "closed" as const;
      received += new TextDecoder().decode(buffer.subarray(0, n));
    }
  })();
  try {
    const how = await Promise.race([reading, safety]);
    assert.equal(
      how,
      "closed",
      `the server kept the connection open after ${received.length} bytes`,
    );
    return received;
  } finally {
    clearTimeout(timer);
    conn.close();
  }
}

Deno.test({
  name: "the local server process",
  // The child's pipes are closed by stop(); nothing else outlives a step.
  sanitizeResources: false,
  async fn(t) {
    const root = await Deno.makeTempDir({ prefix: "wallet-vault-local-server-" });
    const dataDir = `${root}/state/pglite`;
    const env = {
      PGLITE_DATA_DIR: dataDir,
      DEV_KEYS_FILE: `${root}/state/dev-keys.json`,
      LOCAL_HEADER_TIMEOUT_MS: "300",
    };
    try {
      let server = await startLocalServer(env);
      try {
        await t.step("creates its embedded database readable by its owner only", async () => {
          const found = await modes(dataDir);
          assert.ok(found.size > 100, `PGlite wrote only ${found.size} paths`);
          assert.equal(found.get(dataDir), 0o700);
          assertPrivate(found);
        });

        await t.step(
          "registers the development keys' live-run credential for every type: it reveals, named development",
          async () => {
            const base = `http://127.0.0.1:${server.port}/api`;
            const post = async (path: string, body: unknown, headers = {}) => {
              const response = await fetch(`${base}${path}`, {
                method: "POST",
                headers: { "content-type": "application/json", ...headers },
                body: JSON.stringify(body),
              });
              return { status: response.status, body: await response.json() };
            };
            const account = privateKeyToAccount(generatePrivateKey());
            const nonce = await post("/auth/nonce", { address: account.address });
            const message = nonce.body.message as string;
            const proof = await post("/auth/wallet-proof", {
              message,
              signature: await account.signMessage({ message }),
            });
            assert.equal(proof.status, 200, JSON.stringify(proof.body));
            const session = { authorization: `Bearer ${proof.body.access_token}` };
            const value = `sk-dev-${crypto.randomUUID()}`;
            const saved = await fetch(`${base}/secrets`, {
              method: "PUT",
              headers: { "content-type": "application/json", ...session },
              body: JSON.stringify({ secretType: "provider_f_api_key", value }),
            });
            assert.equal(saved.status, 200, await saved.text());
            const { SERVER_REVEAL_TOKEN: credential } = JSON.parse(
              await Deno.readTextFile(env.DEV_KEYS_FILE),
            );
            assert.ok(isLiveRunCredential(credential));
            const revealed = await post("/secrets/reveal", {}, {
              ...session,
              "x-service-server-secret": credential,
            });
            assert.equal(revealed.status, 200, JSON.stringify(revealed.body));
            assert.deepEqual(revealed.body.secrets.map((s: { value: string }) => s.value), [value]);
            const activity = await (await fetch(`${base}/secrets/activity`, { headers: session }))
              .json();
            assert.equal(activity.events[0].credential, "development");
          },
        );

        await t.step(
          "closes a connection whose request head stalls past LOCAL_HEADER_TIMEOUT_MS",
          async () => {
            const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
            await conn.write(new TextEncoder().encode("GET /api/secrets HTTP/1.1\r\nHost: 127."));
            assert.equal(await readUntilClosed(conn), "");
            // A whole request is answered as before.
            const response = await fetch(`http://127.0.0.1:${server.port}/api/secrets`);
            assert.equal(response.status, 200);
            assert.deepEqual((await response.json()).secrets, []);
          },
        );

        await t.step(
          "on the port the system picked (PORT=0), sign-in messages for a client without an Origin name that port",
          async () => {
            const response = await fetch(
              `http://127.0.0.1:${server.port}/functions/v1/wallet-proof/nonce`,
              { method: "POST", headers: { "content-type": "application/json" }, body: "{}" },
            );
            assert.equal(response.status, 200);
            const { uri, domain } = await response.json();
            assert.equal(uri, `http://127.0.0.1:${server.port}`);
            assert.equal(domain, `127.0.0.1:${server.port}`);
          },
        );

        await t.step(
          "a second server or vault:rotate on its data directory, or on its port, is refused in one line",
          async () => {
            const refusal = async (script: string, extra: Record<string, string>) => {
              const run = await new Deno.Command(Deno.execPath(), {
                args: ["run", "--allow-all", new URL(`../${script}`, import.meta.url).pathname],
                env: { ...INHERITED, ...env, NO_COLOR: "1", PORT: "0", ...extra },
                clearEnv: true,
                // One that started instead of refusing would never end on its own.
                signal: AbortSignal.timeout(30_000),
                stdout: "piped",
                stderr: "piped",
              }).output();
              return { code: run.code, stderr: new TextDecoder().decode(run.stderr) };
            };
            for (const script of ["server/main.ts", "scripts/rotate-keys.ts"]) {
              // The same directory however it is spelt: `dir/` is not a way around the lock.
              for (const spelling of [dataDir, `${dataDir}/`]) {
                const { code, stderr } = await refusal(script, { PGLITE_DATA_DIR: spelling });
                assert.equal(code, 1, stderr);
                assert.match(stderr, /is open in another process .* stop it first/);
                assert.doesNotMatch(stderr, /\n\s+at /, "a stack trace");
              }
            }
            const unreachable = await refusal("server/main.ts", {
              DATABASE_URL: "postgres://postgres@127.0.0.1:1/nothing",
            });
            assert.equal(unreachable.code, 1, unreachable.stderr);
            assert.match(unreachable.stderr, /^the database cannot be reached: ECONNREFUSED$/m);
            assert.doesNotMatch(unreachable.stderr, /\n\s+at /, "a stack trace");
            const other = `${root}/other/pglite`;
            const { code, stderr } = await refusal("server/main.ts", {
              PGLITE_DATA_DIR: other,
              PORT: String(server.port),
            });
            assert.equal(code, 1, stderr);
            assert.match(stderr, new RegExp(`port ${server.port} on 127.0.0.1 is in use`));
            assert.doesNotMatch(stderr, /\n\s+at /, "a stack trace");
            // The first server kept its database and its port.
            const response = await fetch(`http://127.0.0.1:${server.port}/api/secrets`);
            assert.equal(response.status, 200);
            await response.body?.cancel();
          },
        );
      } finally {
        // Twice, as when `deno task` passes a group's signal on: one clean stop, exit 0.
        await server.stop(2);
      }

      await t.step("narrows a data directory left readable, on its next start", async () => {
        // As an older version left it: PGlite's 0666 files in directories anyone can enter.
        for (const [path] of await modes(dataDir)) {
          const isDir = (await Deno.lstat(path)).isDirectory;
          await Deno.chmod(path, isDir ? 0o777 : 0o666);
        }
        server = await startLocalServer(env);
        try {
          const found = await modes(dataDir);
          assert.equal(found.get(dataDir), 0o700);
          assertPrivate(found);
        } finally {
          await server.stop();
        }
      });
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});
