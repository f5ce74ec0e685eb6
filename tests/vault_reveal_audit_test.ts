/**
 * Reveal in one round trip (issue 15 item 3), on both engines: the ciphertexts are read and their
 * 'reveal' event written in one database call, committed before anything is released (the rows
 * are decrypted while the commit is under way, and a commit that fails releases nothing); a
 * decryption that then fails is recorded as 'reveal_failed' (a second call on that path only) and
 * answered as before. Every other vault route is one database call as well.
 */
import assert from "node:assert/strict";
import type { Database } from "../functions/_shared/db/db.ts";
import { type Logger } from "../functions/_shared/http/log.ts";
import { silentLogger } from "./support/log.ts";
import { bearer, signIn, TEST_ORIGIN, type TestApp } from "./support/app.ts";
import { atCommit } from "./support/at-commit.ts";
import { auditTrail, countedService } from "./support/counted-service.ts";
import { describeWithDatabase } from "./support/suite.ts";

/** The app over a database whose every call (query, batch, transaction) is counted. */
function countingApp(app: TestApp, log: Logger = silentLogger) {
  const { handler, calls } = countedService(app, log);
  return {
    /** The database calls made while the request was answered, and its response. */
    async send(method: string, path: string, token: string, body?: unknown) {
      const headers = bearer(token, {
        "content-type": "application/json",
        "x-forwarded-for": "127.0.0.1",
      });
      if (path.endsWith("/reveal")) {
        headers["x-service-server-secret"] = app.config.serverRevealToken;
      }
      const before = calls();
      const response = await handler(
        new Request(new URL(path, TEST_ORIGIN), {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
      );
      const text = await response.text();
      return { status: response.status, body: JSON.parse(text), text, calls: calls() - before };
    },
  };
}

describeWithDatabase("reveal audited in one round trip", {
  async "every vault route is one database call: GET, PUT, DELETE and a successful reveal"(app) {
    const counting = countingApp(app);
    const creator = await signIn(app);
    const token = creator.accessToken;
    const value = `sk-one-trip-${crypto.randomUUID()}`;
    const put = await counting.send("PUT", "/api/secrets", token, {
      secretType: "provider_b_key",
      value,
    });
    assert.deepEqual([put.status, put.calls], [200, 1], put.text);
    const other = await counting.send("PUT", "/api/secrets", token, {
      secretType: "provider_a_org_id",
      value: "org-1",
    });
    assert.deepEqual([other.status, other.calls], [200, 1], other.text);
    const list = await counting.send("GET", "/api/secrets", token);
    assert.deepEqual([list.status, list.calls], [200, 1], list.text);
    const revealed = await counting.send("POST", "/api/secrets/reveal", token, {});
    assert.deepEqual([revealed.status, revealed.calls], [200, 1], revealed.text);
    assert.deepEqual(
      revealed.body.secrets.map((s: { secretType: string; value: string }) => [
        s.secretType,
        s.value,
      ]),
      [["provider_a_org_id", "org-1"], ["provider_b_key", value]],
    );
    const removed = await counting.send("DELETE", "/api/secrets", token, {
      secretType: "provider_a_org_id",
    });
    assert.deepEqual([removed.status, removed.calls], [200, 1], removed.text);
    const missing = await counting.send("DELETE", "/api/secrets", token, {
      secretType: "provider_a_org_id",
    });
    assert.deepEqual([missing.status, missing.body.error.code, missing.calls], [
      404,
      "secret_not_found",
      1,
    ]);
    // The reveal's event was in that one call: one event naming the types returned, in the spec's
    // order.
    assert.deepEqual(await auditTrail(app, creator.userId), [
      ["put", ["provider_b_key"]],
      ["put", ["provider_a_org_id"]],
      ["reveal", ["provider_a_org_id", "provider_b_key"]],
      ["delete", ["provider_a_org_id"]],
    ]);
  },

  async "a reveal that reads nothing records nothing"(app) {
    const creator = await signIn(app);
    const counting = countingApp(app);
    await counting.send("PUT", "/api/secrets", creator.accessToken, {
      secretType: "provider_b_key",
      value: `sk-kept-${crypto.randomUUID()}`,
    });
    for (const secretTypes of [[], ["provider_d_key"]]) {
      const answer = await counting.send("POST", "/api/secrets/reveal", creator.accessToken, {
        secretTypes,
      });
      assert.deepEqual([answer.status, answer.body], [200, { secrets: [] }], answer.text);
    }
    assert.deepEqual(await auditTrail(app, creator.userId), [["put", ["provider_b_key"]]]);
  },

  async "a reveal whose audit cannot be written releases nothing"(app) {
    const db = app.database.db;
    const creator = await signIn(app);
    const value = `sk-unaudited-${crypto.randomUUID()}`;
    const counting = countingApp(app);
    await counting.send("PUT", "/api/secrets", creator.accessToken, {
      secretType: "provider_c_key",
      value,
    });
    // The audit trail refuses reveal events for a moment (as a full disk or a broken trigger would).
    await db.query(
      "alter table public.secret_events add constraint refuse_reveals check (action <> 'reveal') not valid",
    );
    try {
      const answer = await counting.send("POST", "/api/secrets/reveal", creator.accessToken, {});
      assert.equal(answer.status, 500, answer.text);
      assert.ok(!answer.text.includes(value));
    } finally {
      await db.query("alter table public.secret_events drop constraint refuse_reveals");
    }
    assert.deepEqual(await auditTrail(app, creator.userId), [["put", ["provider_c_key"]]]);
  },

  async "a reveal whose audit fails at commit releases nothing (on a server, it was decrypted)"(
    app,
  ) {
    const db = app.database.db;
    const creator = await signIn(app);
    const value = `sk-commit-refused-${crypto.randomUUID()}`;
    const counting = countingApp(app);
    await counting.send("PUT", "/api/secrets", creator.accessToken, {
      secretType: "provider_c_key",
      value,
    });
    // The reveal's statement succeeds; its COMMIT is refused (as a deferred check, or a lost
    // connection at that moment, would refuse it), after the rows were handed on to be decrypted.
    const answer = await whileRevealsRefusedAtCommit(
      db,
      () => counting.send("POST", "/api/secrets/reveal", creator.accessToken, {}),
    );
    assert.equal(answer.status, 500, answer.text);
    assert.ok(!answer.text.includes(value));
    assert.deepEqual(await auditTrail(app, creator.userId), [["put", ["provider_c_key"]]]);
  },

  async "a key failure is logged only for a reveal that committed"(app) {
    const db = app.database.db;
    const creator = await signIn(app);
    const logged: string[] = [];
    const counting = countingApp(app, { info() {}, error: (event) => logged.push(event) });
    await counting.send("PUT", "/api/secrets", creator.accessToken, {
      secretType: "provider_d_key",
      value: `sk-keyless-${crypto.randomUUID()}`,
    });
    // Under a key id the keyring does not hold: every reveal of it fails to decrypt.
    await db.query("update public.user_secrets set key_id = 'k0' where user_id = $1", [
      creator.userId,
    ]);
    const refused = await whileRevealsRefusedAtCommit(
      db,
      () => counting.send("POST", "/api/secrets/reveal", creator.accessToken, {}),
    );
    assert.equal(refused.status, 500, refused.text);
    assert.ok(!logged.includes("encryption_key_unavailable"), logged.join(", "));
    const committed = await counting.send("POST", "/api/secrets/reveal", creator.accessToken, {});
    assert.equal(committed.body.error.code, "encryption_key_unavailable");
    assert.ok(logged.includes("encryption_key_unavailable"), logged.join(", "));
  },

  async "a decryption that fails after the recorded reveal is recorded as reveal_failed"(app) {
    const db = app.database.db;
    const creator = await signIn(app);
    const counting = countingApp(app);
    const token = creator.accessToken;
    const values = { provider_d_key: `sk-d-${crypto.randomUUID()}`, provider_e_key: "sk-e-short" };
    for (const [secretType, value] of Object.entries(values)) {
      await counting.send("PUT", "/api/secrets", token, { secretType, value });
    }
    // e's ciphertext copied into d's row: it no longer authenticates there.
    await db.query(
      `update public.user_secrets d set ciphertext = e.ciphertext, iv = e.iv
         from public.user_secrets e
        where d.user_id = $1 and e.user_id = $1
          and d.secret_type = 'provider_d_key' and e.secret_type = 'provider_e_key'`,
      [creator.userId],
    );
    const failed = await counting.send("POST", "/api/secrets/reveal", token, {});
    assert.equal(failed.status, 500, failed.text);
    assert.equal(failed.body.error.code, "decryption_failed");
    assert.deepEqual(failed.body.error.secretTypes, ["provider_d_key"]);
    assert.equal(failed.calls, 2, "the read with its audit, then the failure record");
    for (const value of Object.values(values)) assert.ok(!failed.text.includes(value));

    // A row under a key id the keyring does not hold: encryption_key_unavailable, recorded too.
    await db.query(
      "update public.user_secrets set key_id = 'k0' where user_id = $1 and secret_type = 'provider_e_key'",
      [creator.userId],
    );
    const unavailable = await counting.send("POST", "/api/secrets/reveal", token, {
      secretTypes: ["provider_e_key"],
    });
    assert.equal(unavailable.status, 500, unavailable.text);
    assert.equal(unavailable.body.error.code, "encryption_key_unavailable");
    assert.deepEqual(unavailable.body.error.secretTypes, ["provider_e_key"]);

    // (The tampering above shows as 'rotate' events: updates that kept updated_at.)
    const reveals = (await auditTrail(app, creator.userId)).filter(([action]) =>
      action.startsWith("reveal")
    );
    assert.deepEqual(reveals, [
      ["reveal", ["provider_d_key", "provider_e_key"]],
      ["reveal_failed", ["provider_d_key"]],
      ["reveal", ["provider_e_key"]],
      ["reveal_failed", ["provider_e_key"]],
    ]);
  },
});

/** `send`'s answer while every 'reveal' event is refused when its transaction commits. */
async function whileRevealsRefusedAtCommit<T>(db: Database, send: () => Promise<T>): Promise<T> {
  const refusal = await atCommit(db, {
    table: "public.secret_events",
    name: "refuse_reveals_at_commit",
    body: "if new.action = 'reveal' then raise exception 'audit refused at commit'; end if;",
  });
  try {
    return await send();
  } finally {
    await refusal.remove();
  }
}
