/**
 * Where the per-IP rate limits get the client's address (CLIENT_IP_HEADER, CLIENT_IP_TRUSTED_HOPS):
 * X-Forwarded-For counted from the right, a single-address header, hop counts 1 and 2, malformed
 * values in one shared bucket; and, on both engines, the attack that used to work (rotating a
 * client-written leftmost X-Forwarded-For entry for a fresh budget) now meets 429s, in-process and
 * over a real socket through the local server.
 */
import assert from "node:assert/strict";
import { ConfigError, parseConfig } from "../functions/_shared/config/config.ts";
import type { ClientIpSource } from "../functions/_shared/config/app-config.ts";
import { clientIp } from "../functions/_shared/auth/rate-limit.ts";
import { atEdge } from "../server/app.ts";
import { TEST_ORIGIN, type TestApp, testEnv } from "./support/app.ts";
import { describeWithDatabase } from "./support/suite.ts";

const FORWARDED_1: ClientIpSource = { header: "x-forwarded-for", trustedHops: 1 };
const FORWARDED_2: ClientIpSource = { header: "x-forwarded-for", trustedHops: 2 };
const CLOUDFLARE: ClientIpSource = { header: "cf-connecting-ip", trustedHops: 1 };

const withHeaders = (headers: Record<string, string>) =>
  new Request(`${TEST_ORIGIN}/api/auth/nonce`, { method: "POST", headers });

/** The bucket every request shares when no trustworthy address can be read. */
const UNKNOWN_CLIENT = "unknown";

/** The bucket of a request whose single-address header holds `address`. */
const rateLimitAddress = (address: string) =>
  clientIp(withHeaders({ "cf-connecting-ip": address }), CLOUDFLARE);

/** What a client could put first in X-Forwarded-For: a new address on every request. */
const randomIp = () => {
  const [a, b, c] = crypto.getRandomValues(new Uint8Array(3));
  return `100.${a}.${b}.${c}`;
};

const MALFORMED = [
  "",
  " ",
  ",",
  "garbage",
  "unknown",
  "1.2.3.256",
  "1.2.3",
  "1.2.3.4:8080",
  "[::1]",
  "fe80::1%eth0",
  "1:2:3:4:5:6:7:8:9",
  "::1::2",
  "0x7f.0.0.1",
  "f".repeat(8000),
  "'; drop table public.rate_limit_windows; --",
  "\u00b9.\u00b2.\u00b3.4", // superscript digits (headers are Latin-1 on the wire)
];

Deno.test("by default the rightmost X-Forwarded-For entry counts, so a client's own entries choose nothing", () => {
  assert.equal(
    clientIp(withHeaders({ "x-forwarded-for": "203.0.113.9" }), FORWARDED_1),
    "203.0.113.9",
  );
  for (let i = 0; i < 20; i++) {
    const request = withHeaders({ "x-forwarded-for": `${randomIp()}, 203.0.113.9` });
    assert.equal(clientIp(request, FORWARDED_1), "203.0.113.9");
  }
  // The same list split over several header lines is the same list.
  const split = new Headers();
  split.append("x-forwarded-for", randomIp());
  split.append("x-forwarded-for", "203.0.113.9");
  assert.equal(clientIp(new Request(TEST_ORIGIN, { headers: split }), FORWARDED_1), "203.0.113.9");
  assert.equal(clientIp(withHeaders({}), FORWARDED_1), UNKNOWN_CLIENT);
});

Deno.test("with two trusted hops the entry second from the right counts, and a shorter list is shared", () => {
  const chain = (client: string) => `${client}, 198.51.100.20, 10.0.0.1`;
  assert.equal(
    clientIp(withHeaders({ "x-forwarded-for": chain(randomIp()) }), FORWARDED_2),
    "198.51.100.20",
  );
  assert.equal(
    clientIp(withHeaders({ "x-forwarded-for": "198.51.100.20, 10.0.0.1" }), FORWARDED_2),
    "198.51.100.20",
  );
  // One entry: the request did not pass both proxies, so its one entry proves nothing.
  assert.equal(
    clientIp(withHeaders({ "x-forwarded-for": "198.51.100.20" }), FORWARDED_2),
    UNKNOWN_CLIENT,
  );
});

Deno.test("a single-address header is read whole, and X-Forwarded-For is then ignored", () => {
  assert.equal(
    clientIp(
      withHeaders({ "cf-connecting-ip": "203.0.113.7", "x-forwarded-for": "1.1.1.1" }),
      CLOUDFLARE,
    ),
    "203.0.113.7",
  );
  assert.equal(
    clientIp(withHeaders({ "x-forwarded-for": "203.0.113.7" }), CLOUDFLARE),
    UNKNOWN_CLIENT,
  );
  // A list where one address belongs is malformed, not a list to pick from.
  assert.equal(
    clientIp(withHeaders({ "cf-connecting-ip": "203.0.113.7, 1.1.1.1" }), CLOUDFLARE),
    UNKNOWN_CLIENT,
  );
  assert.equal(
    clientIp(withHeaders({ "x-real-ip": "2001:db8::1" }), { header: "x-real-ip", trustedHops: 1 }),
    "2001:db8:0:0::/64",
  );
});

Deno.test("malformed addresses all land in one shared bucket in every mode", () => {
  for (const value of MALFORMED) {
    for (const source of [FORWARDED_1, FORWARDED_2, CLOUDFLARE]) {
      const request = withHeaders({ [source.header]: `${value}, ${value}` });
      assert.equal(
        clientIp(request, source),
        UNKNOWN_CLIENT,
        `${source.header}: ${value.slice(0, 40)}`,
      );
    }
    assert.equal(
      clientIp(withHeaders({ "x-forwarded-for": `1.2.3.4, ${value}` }), FORWARDED_1),
      UNKNOWN_CLIENT,
    );
  }
});

Deno.test("one address is one bucket however it is written, and IPv6 counts per /64", () => {
  assert.equal(rateLimitAddress("::1"), rateLimitAddress("0:0:0:0:0:0:0:1"));
  assert.equal(rateLimitAddress("2001:DB8::1"), "2001:db8:0:0::/64");
  assert.equal(rateLimitAddress("2001:db8:0:0:ffff:1:2:3"), "2001:db8:0:0::/64");
  assert.equal(rateLimitAddress("2001:db8:0:1::1"), "2001:db8:0:1::/64");
  assert.equal(rateLimitAddress("::ffff:192.0.2.1"), "192.0.2.1");
  assert.equal(rateLimitAddress("::ffff:c000:201"), "192.0.2.1");
  assert.equal(rateLimitAddress("192.000.002.001"), "192.0.2.1");
});

Deno.test("CLIENT_IP_HEADER and CLIENT_IP_TRUSTED_HOPS: defaults, normalised names, refused combinations", () => {
  assert.deepEqual(parseConfig(testEnv()).clientIp, FORWARDED_1);
  assert.deepEqual(
    parseConfig(testEnv({ CLIENT_IP_HEADER: " CF-Connecting-IP " })).clientIp,
    CLOUDFLARE,
  );
  assert.deepEqual(parseConfig(testEnv({ CLIENT_IP_TRUSTED_HOPS: "2" })).clientIp, FORWARDED_2);
  const refused = (env: Record<string, string>, pattern: RegExp) => {
    try {
      parseConfig(testEnv(env));
    } catch (error) {
      assert.ok(error instanceof ConfigError);
      assert.ok(error.problems.some((p) => pattern.test(p)), error.message);
      return;
    }
    assert.fail(`accepted ${JSON.stringify(env)}`);
  };
  refused(
    { CLIENT_IP_HEADER: "cf-connecting-ip", CLIENT_IP_TRUSTED_HOPS: "2" },
    /CLIENT_IP_TRUSTED_HOPS applies only/,
  );
  refused({ CLIENT_IP_HEADER: "x forwarded for" }, /^CLIENT_IP_HEADER/);
  refused({ CLIENT_IP_HEADER: "x-forwarded-for:" }, /^CLIENT_IP_HEADER/);
  for (const hops of ["0", "11", "1.5", "two"]) {
    refused({ CLIENT_IP_TRUSTED_HOPS: hops }, /^CLIENT_IP_TRUSTED_HOPS/);
  }
});

// ---------------------------------------------------------------------------------------------
// End to end, on both engines

/** Fixed one-minute windows: a burst across a window's edge would be counted in two windows. */
async function awayFromWindowEdge(needSeconds = 15) {
  const intoMinute = (Date.now() / 1000) % 60;
  if (intoMinute > 60 - needSeconds) {
    await new Promise((resolve) => setTimeout(resolve, (60 - intoMinute) * 1000 + 500));
  }
}

const nonce = (app: TestApp, headers: Record<string, string>) =>
  app.fetch("/api/auth/nonce", { method: "POST", headers });

/** The status of a request, its body discarded. */
async function statusOf(response: Promise<Response>): Promise<number> {
  const answered = await response;
  await answered.body?.cancel();
  return answered.status;
}

/** Eight requests, strictly one after another (so the counter sees them in order). */
async function eight(send: () => Promise<Response>): Promise<number[]> {
  const answered: number[] = [];
  for (let i = 0; i < 8; i++) answered.push(await statusOf(send()));
  return answered;
}

const THREE_THEN_429 = [200, 200, 200, 429, 429, 429, 429, 429];

describeWithDatabase("client address from X-Forwarded-For (the default)", {
  async "rotating a client-written leftmost entry gets no fresh budget: past 3 nonces, 429s"(app) {
    await awayFromWindowEdge();
    const answered = await eight(() =>
      nonce(app, { "x-forwarded-for": `${randomIp()}, 198.51.100.1` })
    );
    assert.deepEqual(answered, THREE_THEN_429);
    // Another client behind the same proxy chain has its own budget.
    assert.equal(
      await statusOf(nonce(app, { "x-forwarded-for": `${randomIp()}, 198.51.100.2` })),
      200,
    );
  },

  async "proof attempts are counted the same way"(app) {
    await awayFromWindowEdge();
    const answered = await eight(() =>
      app.fetch("/api/auth/wallet-proof", {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-forwarded-for": `${randomIp()}, 198.51.100.3`,
        },
        body: JSON.stringify({ message: "not a message", signature: "0x" }),
      })
    );
    assert.deepEqual(answered, [400, 400, 400, 429, 429, 429, 429, 429]);
  },

  async "malformed values share one bucket: 200s, then 429s, never a 500"(app) {
    await awayFromWindowEdge();
    // Eight different malformed values, one after another: one budget between them.
    const values = MALFORMED.slice(0, 8);
    const answered = await eight(() =>
      nonce(app, { "x-forwarded-for": `198.51.100.4, ${values.shift()}` })
    );
    assert.deepEqual(answered, THREE_THEN_429);
  },

  async "over a real socket the local server writes the address it saw, whatever the client sent"(
    app,
  ) {
    await awayFromWindowEdge();
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      atEdge(app.app.handler, app.config.clientIp),
    );
    try {
      const url = `http://127.0.0.1:${server.addr.port}/api/auth/nonce`;
      const answered = await eight(() =>
        fetch(url, {
          method: "POST",
          headers: { "x-forwarded-for": `${randomIp()}, ${randomIp()}` },
        })
      );
      assert.deepEqual(answered, THREE_THEN_429);
    } finally {
      await server.shutdown();
    }
  },
}, { RATE_LIMIT_NONCE_PER_MINUTE: "3", RATE_LIMIT_PROOF_PER_MINUTE: "3" });

describeWithDatabase("client address two trusted hops from the right", {
  async "the entry the first trusted proxy appended counts; the client's own entries do not"(app) {
    await awayFromWindowEdge();
    const answered = await eight(() =>
      nonce(app, {
        "x-forwarded-for": `${randomIp()}, 198.51.100.5, 10.0.0.${Math.floor(Math.random() * 250)}`,
      })
    );
    assert.deepEqual(answered, THREE_THEN_429);
  },

  async "the local server, as every trusted hop, still counts the socket's address"(app) {
    await awayFromWindowEdge();
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      atEdge(app.app.handler, app.config.clientIp),
    );
    try {
      const url = `http://127.0.0.1:${server.addr.port}/api/auth/nonce`;
      const answered = await eight(() =>
        fetch(url, {
          method: "POST",
          headers: { "x-forwarded-for": `${randomIp()}, ${randomIp()}` },
        })
      );
      assert.deepEqual(answered, THREE_THEN_429);
    } finally {
      await server.shutdown();
    }
  },
}, { RATE_LIMIT_NONCE_PER_MINUTE: "3", CLIENT_IP_TRUSTED_HOPS: "2" });

describeWithDatabase("client address from a single-address header", {
  async "the configured header counts and a rotating X-Forwarded-For changes nothing"(app) {
    await awayFromWindowEdge();
    const answered = await eight(() =>
      nonce(app, { "cf-connecting-ip": "198.51.100.6", "x-forwarded-for": randomIp() })
    );
    assert.deepEqual(answered, THREE_THEN_429);
  },

  async "over a real socket a client-sent value of that header is overwritten"(app) {
    await awayFromWindowEdge();
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      atEdge(app.app.handler, app.config.clientIp),
    );
    try {
      const url = `http://127.0.0.1:${server.addr.port}/api/auth/nonce`;
      const answered = await eight(() =>
        fetch(url, { method: "POST", headers: { "cf-connecting-ip": randomIp() } })
      );
      assert.deepEqual(answered, THREE_THEN_429);
    } finally {
      await server.shutdown();
    }
  },
}, { RATE_LIMIT_NONCE_PER_MINUTE: "3", CLIENT_IP_HEADER: "cf-connecting-ip" });
