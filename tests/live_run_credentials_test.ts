/**
 * Live-run credentials (issue 42), on both engines, with real wallet sign-ins and credentials made
 * by the operator's own library (server/live-run-credentials.ts): a credential reveals only
 * the types in its scope, in one database call, and each reveal names it in the creator's trail;
 * a rotation keeps the predecessor working for its grace period, then refuses it; a revocation or
 * an expiry holds from the next reveal; a credential past its own limit is slowed and logged by
 * name; a malformed one is refused without being looked up. The deprecated SERVER_REVEAL_TOKEN
 * still reveals every type while it is configured, its events unnamed as every earlier one.
 */
import assert from "node:assert/strict";
import { parseConfig } from "../functions/_shared/config/config.ts";
import { generateLiveRunCredential } from "../functions/_shared/auth/live-run-credential-format.ts";
import type { LogFields, Logger } from "../functions/_shared/http/log.ts";
import {
  addCredential,
  listCredentials,
  revokeCredential,
  rotateCredential,
} from "../server/live-run-credentials.ts";
import {
  bearer,
  type SignedIn,
  signIn,
  TEST_ORIGIN,
  type TestApp,
  testEnv,
} from "./support/app.ts";
import { problemsOf, productionEnv } from "./support/config-env.ts";
import { countedService } from "./support/counted-service.ts";
import { describeWithDatabase } from "./support/suite.ts";

/** Reveals per credential per minute in this file: low enough to reach, above any other step's. */
const CREDENTIAL_LIMIT = 8;

interface LogLine {
  readonly event: string;
  readonly fields: LogFields;
}

/** A live-run server's process: its own handler over the test's database, logs and calls kept. */
function liveRunService(app: TestApp) {
  const lines: LogLine[] = [];
  const log: Logger = {
    info: (event, fields = {}) => lines.push({ event, fields }),
    error: (event, fields = {}) => lines.push({ event, fields }),
  };
  const { handler, calls } = countedService(app, log);
  return {
    lines,
    async reveal(credential: string, session: string, secretTypes?: readonly string[]) {
      const before = calls();
      const response = await handler(
        new Request(new URL("/api/secrets/reveal", TEST_ORIGIN), {
          method: "POST",
          headers: bearer(session, {
            "content-type": "application/json",
            "x-forwarded-for": "127.0.0.1",
            "x-service-server-secret": credential,
          }),
          body: JSON.stringify(secretTypes === undefined ? {} : { secretTypes }),
        }),
      );
      const text = await response.text();
      const body = JSON.parse(text);
      return {
        status: response.status,
        code: (body as { error?: { code: string } }).error?.code ?? null,
        secrets: (body.secrets ?? []) as { secretType: string; value: string }[],
        text,
        calls: calls() - before,
      };
    },
  };
}

async function put(app: TestApp, creator: SignedIn, secretType: string, value: string) {
  const response = await app.fetch("/api/secrets", {
    method: "PUT",
    headers: bearer(creator.accessToken, { "content-type": "application/json" }),
    body: JSON.stringify({ secretType, value }),
  });
  assert.equal(response.status, 200, await response.text());
}

/** A creator with provider_b_key and provider_c_key stored. */
async function creatorWithKeys(app: TestApp) {
  const creator = await signIn(app);
  const values = {
    provider_b_key: `sk-b-${crypto.randomUUID()}`,
    provider_c_key: `sk-c-${crypto.randomUUID()}`,
  };
  for (const [type, value] of Object.entries(values)) await put(app, creator, type, value);
  return { creator, values };
}

type Activity = {
  kind: string;
  secretTypes: string[];
  actor: string;
  reason?: string;
  credential?: string;
};

async function activity(app: TestApp, creator: SignedIn): Promise<Activity[]> {
  const response = await app.fetch("/api/secrets/activity", {
    headers: bearer(creator.accessToken),
  });
  const text = await response.text();
  assert.equal(response.status, 200, text);
  return JSON.parse(text).events;
}

/** A service name no other step uses. */
const serviceName = (label: string) => `${label}-${crypto.randomUUID().slice(0, 8)}`;

/** Waits, without asserting how long, until the database's clock has passed `moment`. */
async function untilDatabasePasses(app: TestApp, moment: Date) {
  for (;;) {
    const [{ passed }] = await app.database.db.query<{ passed: boolean }>(
      "select now() > $1::timestamptz as passed",
      [moment],
    );
    if (passed) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Waits for the next fixed window when fewer than `needSeconds` are left in this one. */
async function awayFromWindowEdge(needSeconds = 15) {
  const intoMinute = (Date.now() / 1000) % 60;
  if (intoMinute > 60 - needSeconds) {
    await new Promise((resolve) => setTimeout(resolve, (60 - intoMinute) * 1000 + 500));
  }
}

describeWithDatabase("live-run credentials", {
  async "a credential reveals the types in its scope in one database call, and the reveal names it"(
    app,
  ) {
    const service = liveRunService(app);
    const { creator, values } = await creatorWithKeys(app);
    const name = serviceName("image-worker");
    const { credential } = await addCredential(app.database.db, name, ["provider_b_key"], null);
    const revealed = await service.reveal(credential, creator.accessToken, ["provider_b_key"]);
    assert.deepEqual([revealed.status, revealed.calls], [200, 1], revealed.text);
    assert.deepEqual(revealed.secrets.map((s) => [s.secretType, s.value]), [
      ["provider_b_key", values.provider_b_key],
    ]);
    const [latest] = await activity(app, creator);
    assert.deepEqual(latest, {
      ...latest,
      kind: "revealed",
      secretTypes: ["provider_b_key"],
      actor: "live_run",
      credential: name,
    });
    // The list's last use says by whom; a key no credential has revealed says nothing.
    const listed = await (await app.fetch("/api/secrets", { headers: bearer(creator.accessToken) }))
      .json();
    assert.deepEqual(
      listed.secrets.map((s: { secretType: string; lastUsedBy?: string }) => [
        s.secretType,
        s.lastUsedBy,
      ]),
      [["provider_b_key", name], ["provider_c_key", undefined]],
    );
  },

  async "a type outside the credential's scope is refused with its own code, releases nothing, and is recorded"(
    app,
  ) {
    const service = liveRunService(app);
    const { creator, values } = await creatorWithKeys(app);
    const name = serviceName("image-worker");
    const { credential } = await addCredential(app.database.db, name, ["provider_b_key"], null);
    for (const asked of [["provider_c_key"], ["provider_b_key", "provider_c_key"]]) {
      const refused = await service.reveal(credential, creator.accessToken, asked);
      assert.deepEqual([refused.status, refused.code, refused.calls], [
        403,
        "reveal_out_of_scope",
        1,
      ]);
      for (const value of Object.values(values)) assert.ok(!refused.text.includes(value));
    }
    const [latest] = await activity(app, creator);
    assert.deepEqual(latest, {
      ...latest,
      kind: "reveal_refused",
      reason: "out_of_scope",
      secretTypes: ["provider_b_key", "provider_c_key"],
      credential: name,
    });
    // No types named asks for every type the credential may reveal: its scope, as today.
    const scoped = await service.reveal(credential, creator.accessToken);
    assert.deepEqual(scoped.secrets.map((s) => [s.secretType, s.value]), [
      ["provider_b_key", values.provider_b_key],
    ]);
  },

  async "a malformed credential is refused before any lookup, an unknown one after its lookup"(
    app,
  ) {
    const service = liveRunService(app);
    const { creator } = await creatorWithKeys(app);
    const good = generateLiveRunCredential();
    // The checksum's last character changed: the format check alone refuses it.
    const malformed = good.slice(0, -1) + (good.endsWith("A") ? "B" : "A");
    const refusedMalformed = await service.reveal(malformed, creator.accessToken);
    // One call: the refusal's count and record (refuse_reveal), never the reveal's lookup.
    assert.deepEqual([refusedMalformed.status, refusedMalformed.code, refusedMalformed.calls], [
      403,
      "reveal_forbidden",
      1,
    ]);
    const refusedUnknown = await service.reveal(good, creator.accessToken);
    assert.deepEqual([refusedUnknown.status, refusedUnknown.code, refusedUnknown.calls], [
      403,
      "reveal_forbidden",
      2,
    ]);
    const [latest, before] = await activity(app, creator);
    for (const event of [latest, before]) {
      assert.deepEqual(event, {
        ...event,
        kind: "reveal_refused",
        reason: "reveal_token",
        secretTypes: [],
      });
      assert.equal(event.credential, undefined);
    }
  },

  async "a live run keeps revealing across a rotation, and the predecessor is refused after its grace"(
    app,
  ) {
    const service = liveRunService(app);
    const { creator, values } = await creatorWithKeys(app);
    const name = serviceName("llm-worker");
    const db = app.database.db;
    const first = await addCredential(db, name, ["provider_b_key", "provider_c_key"], null);
    // The live run's server holds one credential at a time; the operator rotates mid-run, and
    // the server moves to the successor a few reveals later, as a redeploy would.
    let held = first.credential;
    const statuses: number[] = [];
    let rotation: Awaited<ReturnType<typeof rotateCredential>> | null = null;
    await awayFromWindowEdge();
    for (let step = 0; step < 6; step++) {
      if (step === 2) rotation = await rotateCredential(db, name, 3);
      if (step === 4) held = rotation!.credential;
      const revealed = await service.reveal(held, creator.accessToken);
      statuses.push(revealed.status);
      assert.deepEqual(
        revealed.secrets.map((s) => s.value),
        [values.provider_b_key, values.provider_c_key],
        revealed.text,
      );
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200]);
    assert.deepEqual(rotation!.info.secretTypes, ["provider_b_key", "provider_c_key"]);
    await untilDatabasePasses(app, rotation!.predecessorExpiresAt);
    const old = await service.reveal(first.credential, creator.accessToken);
    assert.deepEqual([old.status, old.code], [403, "reveal_forbidden"]);
    const successor = await service.reveal(rotation!.credential, creator.accessToken);
    assert.equal(successor.status, 200, successor.text);
    const listed = (await listCredentials(db)).filter((credential) => credential.name === name);
    assert.deepEqual(listed.map((credential) => credential.status), ["live", "expired"]);
    assert.equal(listed[0].rotatedFrom, listed[1].id);
    // Both reveal under the service's one name: the trail tells services apart, not generations.
    const reveals = (await activity(app, creator)).filter((event) => event.kind === "revealed");
    assert.ok(reveals.length >= 7 && reveals.every((event) => event.credential === name));
  },

  async "a revoked credential is refused from the next reveal, and its rotation's successor too"(
    app,
  ) {
    const service = liveRunService(app);
    const { creator } = await creatorWithKeys(app);
    const name = serviceName("video-worker");
    const db = app.database.db;
    const first = await addCredential(db, name, ["provider_b_key"], null);
    const rotation = await rotateCredential(db, name, 3600);
    for (const credential of [first.credential, rotation.credential]) {
      assert.equal((await service.reveal(credential, creator.accessToken)).status, 200);
    }
    assert.equal(await revokeCredential(db, name), 2);
    for (const credential of [first.credential, rotation.credential]) {
      const refused = await service.reveal(credential, creator.accessToken);
      assert.deepEqual([refused.status, refused.code], [403, "reveal_forbidden"]);
    }
    assert.equal(await revokeCredential(db, name), 0);
    // A revoked name can be given a new credential.
    const again = await addCredential(db, name, ["provider_b_key"], null);
    assert.equal((await service.reveal(again.credential, creator.accessToken)).status, 200);
  },

  async "an expired credential is refused"(app) {
    const service = liveRunService(app);
    const { creator } = await creatorWithKeys(app);
    const expiresAt = new Date(Date.now() + 1000);
    const { credential } = await addCredential(
      app.database.db,
      serviceName("batch"),
      ["provider_b_key"],
      expiresAt,
    );
    await untilDatabasePasses(app, expiresAt);
    const refused = await service.reveal(credential, creator.accessToken);
    assert.deepEqual([refused.status, refused.code], [403, "reveal_forbidden"]);
  },

  async "a credential past its own reveal limit is slowed and logged by name, and others are not"(
    app,
  ) {
    const service = liveRunService(app);
    const { creator } = await creatorWithKeys(app);
    const db = app.database.db;
    const name = serviceName("leaked");
    const leaked = await addCredential(db, name, ["provider_b_key"], null);
    const other = await addCredential(db, serviceName("other"), ["provider_b_key"], null);
    await awayFromWindowEdge();
    const statuses: number[] = [];
    for (let i = 0; i <= CREDENTIAL_LIMIT; i++) {
      statuses.push((await service.reveal(leaked.credential, creator.accessToken)).status);
    }
    assert.deepEqual(statuses, [...Array(CREDENTIAL_LIMIT).fill(200), 429]);
    const line = service.lines.find((l) => l.event === "reveal_credential_over_limit");
    assert.deepEqual(line?.fields, { credential: name, user_id: creator.userId });
    for (const { fields } of service.lines) {
      assert.ok(!JSON.stringify(fields).includes(leaked.credential));
    }
    assert.equal((await service.reveal(other.credential, creator.accessToken)).status, 200);
  },

  async "older events name no service and read as before"(app) {
    const { creator } = await creatorWithKeys(app);
    // An event as the trail held it before credentials existed.
    await app.database.db.query(
      `insert into public.secret_events (user_id, secret_types, action)
         values ($1, array['provider_b_key'], 'reveal')`,
      [creator.userId],
    );
    const [latest] = await activity(app, creator);
    assert.deepEqual(Object.keys(latest).sort(), ["actor", "at", "kind", "secretTypes"]);
    assert.deepEqual([latest.kind, latest.actor], ["revealed", "live_run"]);
  },

  async "the deprecated SERVER_REVEAL_TOKEN still reveals every type, its events unnamed as before"(
    app,
  ) {
    const service = liveRunService(app);
    const { creator } = await creatorWithKeys(app);
    const revealed = await service.reveal(app.config.serverRevealToken, creator.accessToken);
    assert.deepEqual([revealed.status, revealed.secrets.length], [200, 2], revealed.text);
    const [latest] = await activity(app, creator);
    assert.deepEqual([latest.kind, latest.credential], ["revealed", undefined]);
  },

  async "no credential is stored, listed or logged, only its hash"(app) {
    const db = app.database.db;
    const { credential, info } = await addCredential(
      db,
      serviceName("audit"),
      ["provider_b_key"],
      null,
    );
    const [row] = await db.query<{ text: string }>(
      "select row_to_json(c)::text as text from public.live_run_credentials c where id = $1",
      [info.id],
    );
    assert.ok(!row.text.includes(credential));
    assert.ok(!JSON.stringify(await listCredentials(db)).includes(credential));
  },
}, { RATE_LIMIT_REVEALS_PER_TOKEN_PER_MINUTE: String(CREDENTIAL_LIMIT) });

Deno.test("the service runs without SERVER_REVEAL_TOKEN, and then takes no header as the legacy token", () => {
  const { SERVER_REVEAL_TOKEN: _unset, ...env } = testEnv();
  assert.equal(parseConfig(env).serverRevealToken, "");
  const { SERVER_REVEAL_TOKEN: _none, ...production } = productionEnv();
  assert.equal(parseConfig(production).serverRevealToken, "");
});

Deno.test("production refuses a live-run credential as SERVER_REVEAL_TOKEN (it would reveal every type)", () => {
  assert.deepEqual(
    problemsOf(productionEnv({ SERVER_REVEAL_TOKEN: generateLiveRunCredential() })),
    [
      "SERVER_REVEAL_TOKEN holds a live-run credential: credentials are rows in the database " +
      "(deno task credentials:add), each with its own scope",
    ],
  );
});
