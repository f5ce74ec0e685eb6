/**
 * Wrong reveal tokens (issue 30 item 3), on both engines, with real wallet sign-ins: each client
 * address gets RATE_LIMIT_WRONG_REVEAL_TOKENS_PER_MINUTE refusals (403), then 429 rate_limited with
 * Retry-After. Only a missing or wrong token counts, so a server holding the right one is never
 * refused by this limit. Every refusal is a log line, and with a live session an audit event
 * naming the creator; neither ever holds the token or a hash of it.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import type { LogFields, Logger } from "../functions/_shared/http/log.ts";
import { createOverBudgetClients } from "../functions/user-secrets/over-budget-clients.ts";
import { bearer, type SignedIn, signIn, TEST_ORIGIN, type TestApp } from "./support/app.ts";
import { auditTrail, countedService } from "./support/counted-service.ts";
import { describeWithDatabase } from "./support/suite.ts";

const BUDGET = 3;

/** Waits for the next fixed window when fewer than `needSeconds` are left in this one. */
async function awayFromWindowEdge(needSeconds = 20) {
  const intoMinute = (Date.now() / 1000) % 60;
  if (intoMinute > 60 - needSeconds) {
    await new Promise((resolve) => setTimeout(resolve, (60 - intoMinute) * 1000 + 500));
  }
}

interface LogLine {
  readonly level: string;
  readonly event: string;
  readonly fields: LogFields;
}

interface RevealTry {
  /** The address the trusted proxy recorded (the right-most X-Forwarded-For entry). */
  readonly client: string;
  /** The x-service-server-secret header; null sends none. */
  readonly serverToken: string | null;
  readonly session?: string;
  /** The whole X-Forwarded-For, when the client wrote entries of its own before the proxy's. */
  readonly forwardedFor?: string;
}

/**
 * One process of the service (its own reveal route, so its own memory of addresses over their
 * budget) over the test's database, with every log line kept and every database call counted.
 */
function serviceProcess(app: TestApp) {
  const lines: LogLine[] = [];
  const log: Logger = {
    info: (event, fields = {}) => lines.push({ level: "info", event, fields }),
    error: (event, fields = {}) => lines.push({ level: "error", event, fields }),
  };
  const { handler, calls } = countedService(app, log);
  return {
    lines,
    async reveal({ client, serverToken, session, forwardedFor }: RevealTry) {
      const headers: Record<string, string> = {
        "content-type": "application/json",
        "x-forwarded-for": forwardedFor ?? client,
      };
      if (session !== undefined) headers.authorization = `Bearer ${session}`;
      if (serverToken !== null) headers["x-service-server-secret"] = serverToken;
      const before = calls();
      const response = await handler(
        new Request(new URL("/api/secrets/reveal", TEST_ORIGIN), {
          method: "POST",
          headers,
          body: "{}",
        }),
      );
      const text = await response.text();
      return {
        status: response.status,
        code: (JSON.parse(text) as { error?: { code: string } }).error?.code ?? null,
        retryAfter: response.headers.get("retry-after"),
        text,
        calls: calls() - before,
      };
    },
  };
}

/** A token as wrong as a guess: the right one's length, one character changed. */
function wrongToken(app: TestApp, index: number): string {
  const right = app.config.serverRevealToken;
  const replacement = right[index % right.length] === "A" ? "B" : "A";
  const at = index % right.length;
  return right.slice(0, at) + replacement + right.slice(at + 1);
}

async function putValue(app: TestApp, creator: SignedIn, value: string) {
  const response = await app.fetch("/api/secrets", {
    method: "PUT",
    headers: bearer(creator.accessToken, { "content-type": "application/json" }),
    body: JSON.stringify({ secretType: "provider_b_key", value }),
  });
  assert.equal(response.status, 200, await response.text());
}

/** Every form of a token's hash a log line or an event could carry. */
function hashesOf(token: string): string[] {
  const digest = createHash("sha256").update(token, "utf8").digest();
  const labelled = createHash("sha256")
    .update(`wallet-vault/reveal-rate-limit/v1:${token}`, "utf8").digest();
  return [
    digest.toString("hex"),
    digest.toString("hex").slice(0, 16),
    digest.toString("base64"),
    digest.toString("base64url").slice(0, 16),
    labelled.toString("hex").slice(0, 16),
  ];
}

describeWithDatabase("wrong reveal tokens", {
  async "wrong tokens from one client are 403 up to its budget, then 429 with Retry-After"(app) {
    await awayFromWindowEdge();
    const service = serviceProcess(app);
    const creator = await signIn(app);
    const client = "203.0.113.10";
    for (let i = 0; i < BUDGET; i++) {
      // A missing header is a wrong try too.
      const serverToken = i === 0 ? null : wrongToken(app, i);
      const refused = await service.reveal({ client, serverToken, session: creator.accessToken });
      assert.deepEqual([refused.status, refused.code], [403, "reveal_forbidden"], refused.text);
    }
    for (const serverToken of [wrongToken(app, 7), null, "guess"]) {
      const limited = await service.reveal({ client, serverToken, session: creator.accessToken });
      assert.deepEqual([limited.status, limited.code], [429, "rate_limited"], limited.text);
      const retryAfter = Number(limited.retryAfter);
      assert.ok(
        Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60,
        `${retryAfter}`,
      );
      assert.equal(JSON.parse(limited.text).error.retryAfterSeconds, retryAfter);
    }
    // Another service process, which has not seen this client yet, refuses it as well.
    const other = await serviceProcess(app).reveal({ client, serverToken: "guess" });
    assert.deepEqual([other.status, other.code], [429, "rate_limited"], other.text);
    // Another client's budget is its own.
    const elsewhere = await service.reveal({ client: "203.0.113.11", serverToken: "guess" });
    assert.deepEqual([elsewhere.status, elsewhere.code], [403, "reveal_forbidden"]);
  },

  async "the budget is the address a trusted proxy recorded, not one the client wrote"(app) {
    await awayFromWindowEdge();
    const service = serviceProcess(app);
    const client = "203.0.113.20";
    for (let i = 0; i <= BUDGET; i++) {
      const answer = await service.reveal({
        client,
        serverToken: "guess",
        forwardedFor: `198.51.100.${i}, ${client}`,
      });
      assert.equal(answer.status, i < BUDGET ? 403 : 429, answer.text);
    }
    // The counter names the address, never the token.
    const buckets = await app.database.db.query<{ bucket: string; hits: number }>(
      "select bucket, hits from public.rate_limit_windows where bucket like '%' || $1",
      [client],
    );
    assert.deepEqual(buckets.map((b) => b.bucket), [`vault:reveal:wrong-token:ip:${client}`]);
  },

  async "a client over its budget never slows the right token: not another client's, not its own"(
    app,
  ) {
    await awayFromWindowEdge();
    const service = serviceProcess(app);
    const creator = await signIn(app);
    const value = `sk-still-revealed-${crypto.randomUUID()}`;
    await putValue(app, creator, value);
    const guesser = "203.0.113.30";
    for (let i = 0; i <= BUDGET; i++) {
      await service.reveal({ client: guesser, serverToken: "guess", session: creator.accessToken });
    }
    const right = app.config.serverRevealToken;
    assert.equal((await service.reveal({ client: guesser, serverToken: "guess" })).status, 429);
    // The live-run server, on another address.
    const liveRun = await service.reveal({
      client: "203.0.113.31",
      serverToken: right,
      session: creator.accessToken,
    });
    assert.equal(liveRun.status, 200, liveRun.text);
    assert.deepEqual(JSON.parse(liveRun.text).secrets.map((s: { value: string }) => s.value), [
      value,
    ]);
    // A holder of the right token behind the guesser's address: only wrong tries are refused.
    const sameAddress = await service.reveal({
      client: guesser,
      serverToken: right,
      session: creator.accessToken,
    });
    assert.equal(sameAddress.status, 200, sameAddress.text);
    // Right tokens never count: many more than the budget from one address, all answered.
    for (let i = 0; i < BUDGET * 4; i++) {
      const answer = await service.reveal({
        client: "203.0.113.32",
        serverToken: right,
        session: creator.accessToken,
      });
      assert.equal(answer.status, 200, answer.text);
    }
    // And a successful reveal is still one database call.
    const counted = await service.reveal({
      client: guesser,
      serverToken: right,
      session: creator.accessToken,
    });
    assert.deepEqual([counted.status, counted.calls], [200, 1]);
  },

  async "a refusal is one database call, and once the process knows the client is over, none"(
    app,
  ) {
    await awayFromWindowEdge();
    const service = serviceProcess(app);
    const creator = await signIn(app);
    const client = "203.0.113.40";
    const calls: [number, number][] = [];
    for (let i = 0; i < BUDGET + 3; i++) {
      const answer = await service.reveal({
        client,
        serverToken: wrongToken(app, i),
        session: creator.accessToken,
      });
      calls.push([answer.status, answer.calls]);
    }
    assert.deepEqual(calls, [
      [403, 1],
      [403, 1],
      [403, 1],
      [429, 1],
      [429, 0],
      [429, 0],
    ]);
  },

  async "each refusal within the budget, and the first over it, is a log line naming the client, never the token or a hash of it"(
    app,
  ) {
    await awayFromWindowEdge();
    const service = serviceProcess(app);
    const creator = await signIn(app);
    const client = "203.0.113.50";
    const sent = [null, ...Array.from({ length: BUDGET + 1 }, (_, i) => wrongToken(app, i))];
    for (const serverToken of sent) {
      await service.reveal({ client, serverToken, session: creator.accessToken });
    }
    await service.reveal({ client: "203.0.113.51", serverToken: "guess" });
    const refusals = service.lines.filter((line) => line.event === "reveal_refused");
    assert.deepEqual(
      refusals.map(({ fields }) => [fields.client, fields.user_id, fields.reason, fields.limited]),
      [
        [client, creator.userId, "missing", false],
        [client, creator.userId, "wrong", false],
        [client, creator.userId, "wrong", false],
        [client, creator.userId, "wrong", true],
        ["203.0.113.51", null, "wrong", false],
      ],
    );
    // The refusals after the first over the budget are only counted, for one line when the
    // window ends (below, with a clock).
    assert.ok(!service.lines.some((line) => line.event === "reveal_refusals_over_budget"));
    const logged = JSON.stringify(service.lines);
    for (const token of [app.config.serverRevealToken, ...sent.filter((t) => t !== null)]) {
      for (const form of [token, token.slice(0, 12), ...hashesOf(token)]) {
        assert.ok(!logged.includes(form), "the log holds a token or a hash of it");
      }
    }
  },

  async "a refusal with a live session is a reveal_refused event for that creator; without one, none"(
    app,
  ) {
    await awayFromWindowEdge();
    const service = serviceProcess(app);
    const creator = await signIn(app);
    const ended = await signIn(app);
    const logout = await app.fetch("/api/auth/logout", {
      method: "POST",
      headers: bearer(ended.accessToken),
    });
    assert.equal(logout.status, 204);
    const eventsBefore = await app.database.db.query<{ count: number }>(
      "select count(*)::int as count from public.secret_events",
    );

    await service.reveal({ client: "203.0.113.60", serverToken: wrongToken(app, 1) });
    await service.reveal({
      client: "203.0.113.60",
      serverToken: "guess",
      session: "not-a-session",
    });
    await service.reveal({
      client: "203.0.113.60",
      serverToken: "guess",
      session: ended.accessToken,
    });
    const eventsAfter = await app.database.db.query<{ count: number }>(
      "select count(*)::int as count from public.secret_events",
    );
    assert.equal(eventsAfter[0].count, eventsBefore[0].count, "no live session, no event");

    const refused = await service.reveal({
      client: "203.0.113.61",
      serverToken: wrongToken(app, 2),
      session: creator.accessToken,
    });
    assert.equal(refused.status, 403);
    // Nothing was read, so the event names no type; nor does it hold anything of the token.
    assert.deepEqual(await auditTrail(app, creator.userId), [["reveal_refused", []]]);
    const [row] = await app.database.db.query<Record<string, unknown>>(
      "select * from public.secret_events where user_id = $1",
      [creator.userId],
    );
    const text = JSON.stringify(row);
    for (const token of [app.config.serverRevealToken, wrongToken(app, 2)]) {
      for (const form of [token.slice(0, 12), ...hashesOf(token)]) {
        assert.ok(!text.includes(form), "the event holds a token or a hash of it");
      }
    }
    assert.ok(service.lines.some((l) => l.event === "reveal_refused" && l.fields.recorded));
  },

  async "the trail records refusals up to the first over the budget in a window, then no more"(
    app,
  ) {
    await awayFromWindowEdge();
    const service = serviceProcess(app);
    const creator = await signIn(app);
    const client = "203.0.113.70";
    const statuses: number[] = [];
    for (let i = 0; i < BUDGET + 3; i++) {
      const answer = await service.reveal({
        client,
        serverToken: "guess",
        session: creator.accessToken,
      });
      statuses.push(answer.status);
    }
    // A process that has not met this client yet counts it again, and records nothing more.
    statuses.push(
      (await serviceProcess(app).reveal({
        client,
        serverToken: "guess",
        session: creator.accessToken,
      })).status,
    );
    assert.deepEqual(statuses, [403, 403, 403, 429, 429, 429, 429]);
    assert.deepEqual(
      await auditTrail(app, creator.userId),
      Array.from({ length: BUDGET + 1 }, () => ["reveal_refused", []]),
    );
  },

  async "many clients with one creator's session add at most one refusal over the budget to that creator's trail"(
    app,
  ) {
    await awayFromWindowEdge();
    const service = serviceProcess(app);
    const creator = await signIn(app);
    const statuses: number[] = [];
    for (let i = 1; i <= BUDGET + 3; i++) {
      // One guess from each of many /64s of one IPv6 block: every client within its own budget.
      const answer = await service.reveal({
        client: `2001:db8:0:${i}::1`,
        serverToken: "guess",
        session: creator.accessToken,
      });
      statuses.push(answer.status);
    }
    assert.deepEqual(statuses, Array.from({ length: BUDGET + 3 }, () => 403));
    assert.deepEqual(
      await auditTrail(app, creator.userId),
      Array.from({ length: BUDGET + 1 }, () => ["reveal_refused", []]),
    );
    // Each is still a log line, saying whether it was recorded.
    assert.deepEqual(
      service.lines.filter((line) => line.event === "reveal_refused")
        .map(({ fields }) => fields.recorded),
      [...Array.from({ length: BUDGET + 1 }, () => true), false, false],
    );
    // Another creator's trail has a budget of its own.
    const other = await signIn(app);
    await service.reveal({
      client: "2001:db8:0:99::1",
      serverToken: "guess",
      session: other.accessToken,
    });
    assert.deepEqual(await auditTrail(app, other.userId), [["reveal_refused", []]]);
  },
}, { RATE_LIMIT_WRONG_REVEAL_TOKENS_PER_MINUTE: String(BUDGET) });

Deno.test("refusals over the budget are one log line per client and window, with their count", () => {
  let clock = 1_000_000;
  const over = createOverBudgetClients(() => clock);
  over.add("203.0.113.80", 30);
  over.add("203.0.113.81", 45);
  for (let i = 0; i < 5; i++) assert.equal(over.retryAfter("203.0.113.80"), 30);
  assert.equal(over.retryAfter("203.0.113.81"), 45);
  assert.equal(over.retryAfter("203.0.113.82"), null, "a client not over is not counted");
  assert.deepEqual(over.ended(), [], "nothing while the windows last");
  clock += 30_000;
  assert.deepEqual(over.ended(), [{ client: "203.0.113.80", refusals: 5 }]);
  assert.deepEqual(over.ended(), [], "each window's count once");
  clock += 15_000;
  // The client's own next try after its window hands its count over too.
  assert.equal(over.retryAfter("203.0.113.81"), null);
  assert.deepEqual(over.ended(), [{ client: "203.0.113.81", refusals: 1 }]);
  // A client over again in a new window starts a new count; one with none gives no line.
  over.add("203.0.113.80", 60);
  clock += 60_000;
  assert.deepEqual(over.ended(), []);
});
