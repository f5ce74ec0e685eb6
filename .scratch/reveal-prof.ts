import { setUp } from "../bench/profile-setup.ts";
import { readForReveal } from "../functions/user-secrets/vault-store.ts";
import { SECRET_TYPES } from "../functions/_shared/vault/secret-types.ts";
import { REVEAL_TOKEN_HEADER } from "../functions/_shared/http/reveal-header.ts";
const p = await setUp("postgres://postgres@127.0.0.1:5432/postgres");
const UNL = { writesPerMinute: 1e9, revealsPerMinute: 1e9, revealsPerTokenPerMinute: 1e9 };
const revealToken = p.context.config.serverRevealToken;
const req = (url: string) =>
  new Request(url, { method: "POST", headers: { ...p.auth, [REVEAL_TOKEN_HEADER]: revealToken } });
const steps: [string, () => Promise<unknown>][] = [
  [
    "audited floor batch",
    () =>
      p.db.batch([{
        text:
          "select secret_type, ciphertext, iv, key_id from public.user_secrets where user_id = $1",
        params: [p.userId],
      }, {
        text:
          "insert into public.secret_events (user_id, secret_type, action) values ($1, 'provider_a_api_key', 'reveal')",
        params: [p.userId],
      }]),
  ],
  ["readForReveal", () => readForReveal(p.db, p.session, [...SECRET_TYPES], "bucket", UNL)],
  ["decrypt 7", async () => {
    const rows = await p.db.query<any>("select * from public.user_secrets where user_id = $1", [
      p.userId,
    ]);
    const t = performance.now();
    await Promise.all(
      rows.map((r: any) =>
        p.context.keyring.decrypt({ ciphertext: r.ciphertext, iv: r.iv, keyId: r.key_id }, {
          userId: p.userId,
          secretType: r.secret_type,
        })
      ),
    );
    return performance.now() - t;
  }],
  ["user-secrets fn in-process", async () => {
    const r = await p.app.functions["user-secrets"](
      req("http://x/functions/v1/user-secrets/reveal"),
    );
    if (r.status !== 200) throw new Error(await r.text());
    await r.text();
  }],
  ["api in-process", async () => {
    const r = await p.app.functions.api(req("http://x/api/secrets/reveal"));
    if (r.status !== 200) throw new Error(await r.text());
    await r.text();
  }],
  ["over HTTP same process", async () => {
    const r = await fetch(req(`${p.appUrl}/api/secrets/reveal`));
    if (r.status !== 200) throw new Error(await r.text());
    await r.text();
  }],
];
for (const [, f] of steps) for (let i = 0; i < 100; i++) await f();
const samples = steps.map(() => [] as number[]);
for (let round = 0; round < 3; round++) {
  for (const [i, [, f]] of steps.entries()) {
    for (let n = 0; n < 300; n++) {
      const t = performance.now();
      await f();
      samples[i].push((performance.now() - t) * 1000);
    }
  }
}
for (const [i, [name]] of steps.entries()) {
  const s = samples[i].sort((a, b) => a - b);
  console.log(String(Math.round(s[s.length >> 1])).padStart(6), "µs", name);
}
await p.appServer.shutdown();
await p.floorServer.shutdown();
await p.db.close();
await p.bench.drop();
