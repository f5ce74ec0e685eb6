/**
 * Local origins that just work: outside production, a page on any loopback origin (a dev server
 * on another port) passes CORS and gets a sign-in message naming its own origin, which only that
 * page can then present; production keeps its explicit https list. On both engines, through the
 * /api proxy and the function URLs, with real signatures.
 */
import assert from "node:assert/strict";
import { buildSiweMessage } from "../functions/_shared/auth/siwe.ts";
import { localStackProblems } from "../functions/_shared/config/local-stack.ts";
import { isLoopbackOrigin } from "../functions/_shared/http/local-origins.ts";
import { isLoopbackHostname } from "../protocol/loopback.ts";
import { createVaultServerClient } from "../sdk/src/server.ts";
import { appOn, bearer, newWallet, TEST_ORIGIN, type TestApp } from "./support/app.ts";
import { productionEnv } from "./support/config-env.ts";
import { openTestDatabase, testEngines } from "./support/database.ts";
import type { NonceAnswer } from "./support/siwe.ts";

/** Whether the local-stack check takes a project at `host` for local. */
const isLocalHost = (host: string) =>
  localStackProblems("development", { SUPABASE_URL: `http://${host}:54321` }).length === 0;

/** Origins of pages on the developer's machine, each on a port of its own. */
const LOOPBACK_PAGES = [
  "http://localhost:5173",
  "http://localhost:5174",
  "http://127.0.0.1:3000",
  "http://[::1]:8080",
  "https://localhost:8443",
  "http://app.localhost:5175",
];

/** Origins that are not loopback pages, or not origins as a browser sends them. */
const NOT_LOOPBACK = [
  "http://192.168.1.20:5173",
  "http://127.0.0.1.nip.io:5173",
  "http://localhost.example.com:5173",
  "https://evil.example",
  "null",
  "http://localhost:5173/",
  "http://user@localhost:5173",
  "HTTP://LOCALHOST:5173",
  "http://localhost:80",
  "ws://localhost:5173",
  "http://127.1:5173",
];

function preflight(app: TestApp, path: string, origin: string): Promise<Response> {
  return app.fetch(path, {
    method: "OPTIONS",
    headers: {
      origin,
      "access-control-request-method": "POST",
      "access-control-request-headers": "content-type, authorization",
    },
  });
}

function post(app: TestApp, path: string, body: unknown, origin?: string): Promise<Response> {
  return app.fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", ...(origin ? { origin } : {}) },
    body: JSON.stringify(body),
  });
}

async function nonceFor(app: TestApp, address: string, origin?: string): Promise<NonceAnswer> {
  const response = await post(app, "/api/auth/nonce", { address }, origin);
  const body = await response.json();
  assert.equal(response.status, 200, JSON.stringify(body));
  return body;
}

async function errorCode(response: Response): Promise<string> {
  return (await response.json()).error?.code;
}

Deno.test("a loopback origin is an http(s) origin as browsers send it, on localhost, *.localhost, 127.0.0.0/8 or [::1]", () => {
  const mapped = "http://[::ffff:7f00:1]:3000"; // 127.0.0.1 mapped into IPv6, as URL writes it
  for (const origin of [...LOOPBACK_PAGES, "http://127.8.9.10:1", "https://localhost", mapped]) {
    assert.equal(isLoopbackOrigin(origin), true, origin);
  }
  for (const origin of NOT_LOOPBACK) assert.equal(isLoopbackOrigin(origin), false, origin);
  assert.equal(isLoopbackOrigin(null), false);
});

Deno.test("CORS, the local-stack check and the server client's plain http share one loopback rule", () => {
  const loopback = [
    "localhost",
    "app.localhost",
    "127.0.0.1",
    "127.8.9.10",
    "[::1]",
    "[::ffff:7f00:1]",
    "[::ffff:7fff:ffff]",
  ];
  const not = [
    "192.168.1.20",
    "127.0.0.1.nip.io",
    "localhost.example.com",
    "[::ffff:a00:5]",
    "[::2]",
  ];
  for (const host of loopback) {
    assert.equal(isLoopbackHostname(host), true, host);
    assert.equal(isLoopbackOrigin(`http://${host}:3000`), true, host);
    assert.equal(isLocalHost(host), true, host);
    // The server client's one exception: a *.localhost name its resolver might ask DNS for.
    const client = () =>
      createVaultServerClient({ baseUrl: `http://${host}:3000/api`, revealToken: "t" });
    if (host.endsWith(".localhost")) assert.throws(client, TypeError, host);
    else assert.doesNotThrow(client, host);
  }
  for (const host of not) {
    assert.equal(isLoopbackHostname(host), false, host);
    assert.equal(isLoopbackOrigin(`http://${host}:3000`), false, host);
    assert.equal(isLocalHost(host), false, host);
    assert.throws(
      () => createVaultServerClient({ baseUrl: `http://${host}:3000/api`, revealToken: "t" }),
      TypeError,
      host,
    );
  }
});

for (const engine of testEngines()) {
  Deno.test({
    name: `local origins in development, and production's explicit list [${engine}]`,
    // PGlite and postgres.js keep timers and sockets open between steps by design.
    sanitizeOps: false,
    sanitizeResources: false,
    async fn(t) {
      const database = await openTestDatabase(engine);
      // Development with nothing configured: the server's own origin (TEST_ORIGIN) only.
      const dev = appOn(database.db, { APP_ENV: "development" });
      // The setup: one dev server listed, then a second one on the next port.
      const devListed = appOn(database.db, {
        APP_ENV: "development",
        ALLOWED_ORIGINS: "http://localhost:5173",
      });
      const production = appOn(database.db, productionEnv());
      try {
        await t.step(
          "in development a CORS preflight from a loopback page on any port is allowed, with or without ALLOWED_ORIGINS",
          async () => {
            for (const app of [devListed, dev]) {
              for (const origin of LOOPBACK_PAGES) {
                for (const path of ["/api/auth/nonce", "/functions/v1/wallet-proof/nonce"]) {
                  const response = await preflight(app, path, origin);
                  assert.equal(response.status, 204);
                  const allowed = response.headers.get("access-control-allow-origin");
                  assert.ok(allowed === origin || (allowed === "*" && app === dev), origin);
                  assert.match(response.headers.get("access-control-allow-methods") ?? "", /POST/);
                }
              }
            }
            // An actual answer names the page too, so the browser hands it over.
            const listed = await devListed.fetch("/api/secrets", {
              headers: { origin: "http://[::1]:8080" },
            });
            assert.equal(listed.headers.get("access-control-allow-origin"), "http://[::1]:8080");
            assert.equal(listed.headers.get("access-control-expose-headers"), "retry-after");
            await listed.body?.cancel();
          },
        );

        await t.step(
          "in development a page that is not loopback passes CORS only when listed",
          async () => {
            for (const origin of NOT_LOOPBACK) {
              const response = await preflight(devListed, "/api/auth/nonce", origin);
              assert.equal(response.headers.get("access-control-allow-origin"), null, origin);
            }
          },
        );

        await t.step(
          "in development the nonce names a loopback page's own origin, whatever its port or host",
          async () => {
            const address = newWallet().address;
            for (const app of [dev, devListed]) {
              for (const origin of LOOPBACK_PAGES) {
                const answer = await nonceFor(app, address, origin);
                const host = new URL(origin).host;
                assert.equal(answer.domain, host, origin);
                assert.equal(answer.uri, origin);
                assert.ok(
                  answer.message.startsWith(`${host} wants you to sign in`),
                  answer.message,
                );
                assert.ok(answer.message.includes(`\nURI: ${origin}\n`), answer.message);
              }
            }
            // Through the function's own URL (supabase-js functions.invoke) as well.
            const response = await post(
              dev,
              "/functions/v1/wallet-proof/nonce",
              { address },
              "http://localhost:5174",
            );
            assert.equal((await response.json()).domain, "localhost:5174");
          },
        );

        await t.step(
          "in development a page that is not loopback, or none, gets the configured origin as before",
          async () => {
            const address = newWallet().address;
            const own = new URL(TEST_ORIGIN);
            for (const origin of [...NOT_LOOPBACK, undefined]) {
              const answer = await nonceFor(dev, address, origin);
              assert.equal(answer.domain, own.host, String(origin));
              assert.equal(answer.uri, TEST_ORIGIN);
            }
            const listed = await nonceFor(devListed, address, "https://evil.example");
            assert.equal(listed.domain, "localhost:5173");
          },
        );

        await t.step(
          "a loopback page on another port signs in with the message made for it",
          async () => {
            const page = "http://localhost:5174";
            const account = newWallet();
            const { message } = await nonceFor(devListed, account.address, page);
            const signature = await account.signMessage({ message });
            const response = await post(
              devListed,
              "/api/auth/wallet-proof",
              { message, signature },
              page,
            );
            const body = await response.json();
            assert.equal(response.status, 200, JSON.stringify(body));
            const list = await devListed.fetch("/api/secrets", {
              headers: bearer(body.access_token, { origin: page }),
            });
            assert.equal(list.status, 200);
            assert.equal(list.headers.get("access-control-allow-origin"), page);
            await list.body?.cancel();
          },
        );

        await t.step(
          "a message made for one loopback page is refused from another page, from the server's own, and from no page",
          async () => {
            const page = "http://localhost:5173";
            const account = newWallet();
            const { message } = await nonceFor(dev, account.address, page);
            const signature = await account.signMessage({ message });
            for (const other of ["http://localhost:5174", "http://127.0.0.1:5173", TEST_ORIGIN]) {
              const replayed = await post(
                dev,
                "/api/auth/wallet-proof",
                { message, signature },
                other,
              );
              assert.equal(replayed.status, 401, other);
              assert.equal(await errorCode(replayed), "domain_not_allowed", other);
            }
            const pageless = await post(dev, "/api/auth/wallet-proof", { message, signature });
            assert.equal(pageless.status, 401);
            assert.equal(await errorCode(pageless), "domain_not_allowed");
            // The refusals spent nothing: the page it was made for still signs in with it.
            const own = await post(dev, "/api/auth/wallet-proof", { message, signature }, page);
            assert.equal(own.status, 200, JSON.stringify(await own.clone().json()));
            await own.body?.cancel();
          },
        );

        await t.step(
          "in development a message for a page that is not loopback is refused, even from that page",
          async () => {
            const page = "http://192.168.1.20:5173";
            const account = newWallet();
            const nonce = await nonceFor(dev, account.address, page);
            const message = messageFor(nonce, account.address, page);
            const signature = await account.signMessage({ message });
            const response = await post(
              dev,
              "/api/auth/wallet-proof",
              { message, signature },
              page,
            );
            assert.equal(response.status, 401);
            assert.equal(await errorCode(response), "domain_not_allowed");
          },
        );

        await t.step(
          "production lets no loopback page in: CORS answers only its https list",
          async () => {
            const listed = await preflight(
              production,
              "/api/auth/nonce",
              "https://app.example.com",
            );
            assert.equal(
              listed.headers.get("access-control-allow-origin"),
              "https://app.example.com",
            );
            for (const origin of LOOPBACK_PAGES) {
              const response = await preflight(production, "/api/auth/nonce", origin);
              assert.equal(response.status, 204);
              assert.equal(response.headers.get("access-control-allow-origin"), null, origin);
            }
          },
        );

        await t.step(
          "production's nonce names its configured origin for a loopback page, and refuses a message made for one",
          async () => {
            const page = "http://localhost:5173";
            const account = newWallet();
            const nonce = await nonceFor(production, account.address, page);
            assert.equal(nonce.domain, "app.example.com");
            assert.equal(nonce.uri, "https://app.example.com");
            for (const origin of [page, "https://localhost:5173"]) {
              const message = messageFor(nonce, account.address, origin);
              const signature = await account.signMessage({ message });
              const response = await post(
                production,
                "/api/auth/wallet-proof",
                { message, signature },
                origin,
              );
              assert.equal(response.status, 401, origin);
              assert.equal(await errorCode(response), "domain_not_allowed", origin);
            }
            // The message it did issue still signs in (from the listed page).
            const signature = await account.signMessage({ message: nonce.message });
            const response = await post(
              production,
              "/api/auth/wallet-proof",
              { message: nonce.message, signature },
              "https://app.example.com",
            );
            assert.equal(response.status, 200);
            await response.body?.cancel();
          },
        );
      } finally {
        await database.close();
      }
    },
  });
}

/** The EIP-4361 message for `nonce`'s fields, made for `origin` instead of the one it names. */
function messageFor(nonce: NonceAnswer, address: string, origin: string): string {
  return buildSiweMessage({
    address: address as `0x${string}`,
    domain: new URL(origin).host,
    uri: origin,
    chainId: nonce.chainId,
    nonce: nonce.nonce,
    issuedAt: new Date(nonce.issuedAt),
    expirationTime: new Date(nonce.expiresAt),
  });
}
