/**
 * Provider routing follows the spec's table (written out literally here, so a registry edit that
 * changes routing has to change this test too) and says which keys would enable a step.
 */
import assert from "node:assert/strict";
import {
  DEFAULT_PROVIDER_ORDER,
  planRoute,
  providerReadiness,
  type RouteResult,
  ROUTES,
} from "../protocol/provider-routing.ts";
import { PROVIDERS, SECRET_TYPES, type SecretType, STEP_KINDS } from "../protocol/secret-types.ts";

const A = ["provider_a_api_key", "provider_a_org_id"] as const;

function chosen(result: RouteResult) {
  assert.ok(result.ok, `expected a route, got: ${result.ok ? "" : result.message}`);
  return { provider: result.provider, secretTypes: result.secretTypes };
}

function failed(result: RouteResult) {
  assert.ok(!result.ok, "expected no route");
  return result;
}

Deno.test("the routing table is the spec's: image A B C D, video A B, llm E F, multimodal F", () => {
  assert.deepEqual(ROUTES, {
    image: ["provider_a", "provider_b", "provider_c", "provider_d"],
    video: ["provider_a", "provider_b"],
    llm: ["provider_e", "provider_f"],
    multimodal: ["provider_f"],
  });
  assert.deepEqual(DEFAULT_PROVIDER_ORDER, [
    "provider_a",
    "provider_b",
    "provider_c",
    "provider_d",
    "provider_e",
    "provider_f",
  ]);
});

Deno.test("with every key stored, each step goes to its first provider in the default order", () => {
  const expected = {
    image: { provider: "provider_a", secretTypes: A },
    video: { provider: "provider_a", secretTypes: A },
    llm: { provider: "provider_e", secretTypes: ["provider_e_key"] },
    multimodal: { provider: "provider_f", secretTypes: ["provider_f_api_key"] },
  };
  for (const kind of STEP_KINDS) {
    assert.deepEqual(chosen(planRoute(kind, SECRET_TYPES)), expected[kind], kind);
  }
});

Deno.test("provider A needs both of its types: either one alone falls through to the next", () => {
  for (const half of A) {
    assert.deepEqual(chosen(planRoute("video", [half, "provider_b_key"])), {
      provider: "provider_b",
      secretTypes: ["provider_b_key"],
    });
    assert.equal(planRoute("video", [half]).ok, false);
  }
  assert.deepEqual(chosen(planRoute("image", [...A])), { provider: "provider_a", secretTypes: A });
});

Deno.test("each provider alone enables exactly the step kinds the spec gives it", () => {
  for (const [id, provider] of Object.entries(PROVIDERS)) {
    for (const kind of STEP_KINDS) {
      const result = planRoute(kind, provider.requires);
      if (provider.stepKinds.includes(kind)) {
        assert.deepEqual(chosen(result), { provider: id, secretTypes: provider.requires });
      } else {
        assert.equal(result.ok, false, `${id} must not run ${kind} steps`);
      }
    }
  }
  // The image fallbacks one by one: C when A and B are absent, D when only D is there.
  assert.equal(
    chosen(planRoute("image", ["provider_c_key", "provider_d_key"])).provider,
    "provider_c",
  );
  assert.equal(
    chosen(planRoute("image", ["provider_d_key", "provider_e_key"])).provider,
    "provider_d",
  );
  // LLM goes through the gateway only when provider E's key is absent.
  assert.equal(chosen(planRoute("llm", ["provider_f_api_key"])).provider, "provider_f");
});

Deno.test("a step no stored key enables says exactly which keys would enable it", () => {
  const messages = {
    image: "image steps need provider_a_api_key + provider_a_org_id, or provider_b_key, " +
      "or provider_c_key, or provider_d_key.",
    video: "video steps need provider_a_api_key + provider_a_org_id, or provider_b_key.",
    llm: "llm steps need provider_e_key, or provider_f_api_key.",
    multimodal: "multimodal steps need provider_f_api_key.",
  };
  for (const kind of STEP_KINDS) {
    const error = failed(planRoute(kind, []));
    assert.equal(error.code, "no_provider_for_step");
    assert.equal(error.message, messages[kind]);
    assert.deepEqual(error.options.map((o) => o.provider), ROUTES[kind]);
  }
  // Keys for other step kinds do not help, and the message stays the same.
  assert.equal(
    failed(planRoute("multimodal", ["provider_e_key", "provider_b_key"])).message,
    messages.multimodal,
  );
});

Deno.test("a half-configured provider A is named with the one type it still lacks", () => {
  const error = failed(planRoute("video", ["provider_a_org_id"]));
  assert.equal(
    error.message,
    "video steps need provider_a_api_key + provider_a_org_id, or provider_b_key. " +
      "Provider A is missing provider_a_api_key.",
  );
  assert.deepEqual(error.options, [
    { provider: "provider_a", requires: A, missing: ["provider_a_api_key"] },
    { provider: "provider_b", requires: ["provider_b_key"], missing: ["provider_b_key"] },
  ]);
});

Deno.test("a preference reorders the candidates but never disables one", () => {
  const all = SECRET_TYPES;
  assert.equal(
    chosen(planRoute("image", all, ["provider_d", "provider_b"])).provider,
    "provider_d",
  );
  assert.equal(chosen(planRoute("llm", all, ["provider_f"])).provider, "provider_f");
  // Providers that cannot run the step are skipped; so is a preferred one that lacks a key.
  assert.equal(
    chosen(planRoute("video", all, ["provider_f", "provider_b"])).provider,
    "provider_b",
  );
  assert.equal(
    chosen(planRoute("image", ["provider_c_key", "provider_b_key"], ["provider_d", "provider_c"]))
      .provider,
    "provider_c",
  );
  assert.equal(
    chosen(planRoute("image", ["provider_b_key"], ["provider_d"])).provider,
    "provider_b",
    "providers the preference leaves out still follow in the default order",
  );
  // Recipe first, then creator: the first mention wins.
  const preference = ["provider_c", "provider_b", "provider_c", "provider_a"];
  assert.deepEqual(failed(planRoute("image", [], preference)).options.map((o) => o.provider), [
    "provider_c",
    "provider_b",
    "provider_a",
    "provider_d",
  ]);
  // The options in an error follow the preference too.
  assert.deepEqual(
    failed(planRoute("video", [], ["provider_b"])).options.map((o) => o.provider),
    ["provider_b", "provider_a"],
  );
});

Deno.test("unknown step kinds, providers and type names are typed errors or ignored", () => {
  const kind = failed(planRoute("audio", SECRET_TYPES));
  assert.equal(kind.code, "unknown_step_kind");
  assert.match(kind.message, /image, video, llm, multimodal/);
  const provider = failed(planRoute("image", SECRET_TYPES, ["provider_z"]));
  assert.equal(provider.code, "unknown_provider");
  assert.match(provider.message, /"provider_z"/);
  // A name the registry does not know enables nothing.
  assert.equal(
    failed(planRoute("llm", ["provider_e_api_key", "__proto__"])).code,
    "no_provider_for_step",
  );
  // Values a recipe file may hold that are not strings or lists: typed errors, never exceptions.
  for (const preference of ["provider_b", null, 7n, {}]) {
    const refused = failed(planRoute("video", SECRET_TYPES, preference as unknown as string[]));
    assert.equal(refused.code, "unknown_provider");
  }
  for (const entry of [10n, null, Object.create(null), Symbol("s")]) {
    const refused = failed(planRoute("video", SECRET_TYPES, [entry] as unknown as string[]));
    assert.equal(refused.code, "unknown_provider");
  }
  for (const stepKind of [10n, null, Object.create(null), Symbol("s")]) {
    const refused = failed(planRoute(stepKind as unknown as string, SECRET_TYPES));
    assert.equal(refused.code, "unknown_step_kind");
  }
});

Deno.test("readiness lists every provider with what is missing, derived from the stored types", () => {
  const none = providerReadiness([]);
  assert.deepEqual(none.map((p) => p.id), Object.keys(PROVIDERS));
  for (const provider of none) {
    assert.equal(provider.ready, false);
    assert.deepEqual(provider.missing, PROVIDERS[provider.id].requires);
    assert.deepEqual(provider.stepKinds, PROVIDERS[provider.id].stepKinds);
    assert.equal(provider.label, PROVIDERS[provider.id].label);
  }

  const stored: SecretType[] = ["provider_a_org_id", "provider_c_key", "provider_f_api_key"];
  const byId = Object.fromEntries(
    providerReadiness(stored).map((p) => [p.id, { ready: p.ready, missing: p.missing }]),
  );
  assert.deepEqual(byId, {
    provider_a: { ready: false, missing: ["provider_a_api_key"] },
    provider_b: { ready: false, missing: ["provider_b_key"] },
    provider_c: { ready: true, missing: [] },
    provider_d: { ready: false, missing: ["provider_d_key"] },
    provider_e: { ready: false, missing: ["provider_e_key"] },
    provider_f: { ready: true, missing: [] },
  });
  assert.ok(providerReadiness(SECRET_TYPES).every((p) => p.ready));
});
