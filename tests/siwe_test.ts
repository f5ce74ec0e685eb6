/**
 * EIP-4361 / EIP-191 in isolation (functions/_shared/auth/siwe.ts, siwe-parser.ts): nonces, the
 * strict parser checked against the reference parser the wallets use (`siwe` →
 * `@spruceid/siwe-parser`), the policy checks in their order, and signatures from real keys,
 * including malformed and high-s ones.
 */
import assert from "node:assert/strict";
import { SiweMessage } from "siwe";
import { type Hex, hexToBigInt, recoverMessageAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createSiweMessage } from "viem/siwe";
import { ServiceError } from "../functions/_shared/http/errors.ts";
import {
  buildSiweMessage,
  checkSiweMessage,
  generateNonce,
  type SiwePolicy,
  toStatement,
  verifySignature,
} from "../functions/_shared/auth/siwe.ts";
import { parseSiweMessage } from "../functions/_shared/auth/siwe-parser.ts";
import { Rng, seedFromEnv } from "./support/fuzz.ts";

const ORIGIN = "https://app.example.com";
const account = privateKeyToAccount(generatePrivateKey());
const NOW = new Date("2026-11-22T10:00:00.000Z");
const policy: SiwePolicy = { origins: [ORIGIN], chainIds: null, now: NOW, clockSkewMs: 60_000 };
/** secp256k1's group order n. */
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

function message(overrides: Partial<Parameters<typeof createSiweMessage>[0]> = {}): string {
  return createSiweMessage({
    domain: "app.example.com",
    address: account.address,
    statement: "Sign in to the test app.",
    uri: `${ORIGIN}/settings`,
    version: "1",
    chainId: 1,
    nonce: "abcdefgh12345678ABCD",
    issuedAt: new Date(NOW.getTime() - 1000),
    expirationTime: new Date(NOW.getTime() + 600_000),
    ...overrides,
  });
}

function throwsCode(work: () => unknown, code: string, note?: string): void {
  try {
    work();
  } catch (error) {
    assert.ok(error instanceof ServiceError, `expected a ServiceError, got ${error}`);
    assert.equal(error.code, code, note);
    return;
  }
  assert.fail(`expected ${code}${note ? ` (${note})` : ""}, but it passed`);
}

/** True when the reference parser (what MetaMask & co. use to recognise SIWE) accepts the text. */
function referenceAccepts(text: string): boolean {
  try {
    new SiweMessage(text);
    return true;
  } catch {
    return false;
  }
}

Deno.test("nonces: 32 alphanumerics from the CSPRNG, unique, every character of the alphabet used", () => {
  const nonces = Array.from({ length: 2000 }, generateNonce);
  for (const nonce of nonces) assert.match(nonce, /^[A-Za-z0-9]{32}$/);
  assert.equal(new Set(nonces).size, nonces.length);
  // 64,000 characters over 62 symbols: ~1,032 each. A biased or narrowed alphabet shows here.
  const counts = new Map<string, number>();
  for (const c of nonces.join("")) counts.set(c, (counts.get(c) ?? 0) + 1);
  assert.equal(counts.size, 62);
  for (const [c, count] of counts) assert.ok(count > 800 && count < 1300, `${c}: ${count}`);
});

Deno.test("a message the server builds parses back to the same fields, and the reference agrees", () => {
  const fields = {
    address: account.address,
    domain: "app.example.com",
    uri: ORIGIN,
    chainId: 10,
    nonce: generateNonce(),
    issuedAt: NOW,
    expirationTime: new Date(NOW.getTime() + 600_000),
    statement: toStatement("Sign in to wallet-vault. It costs no gas; it moves nothing."),
  };
  const text = buildSiweMessage(fields);
  assert.deepEqual(parseSiweMessage(text), fields);
  const reference = new SiweMessage(text);
  assert.equal(reference.address, fields.address);
  assert.equal(reference.nonce, fields.nonce);
  assert.equal(reference.statement, fields.statement);
  assert.equal(reference.expirationTime, fields.expirationTime.toISOString());
});

Deno.test("statements keep only the characters EIP-4361 allows", () => {
  assert.equal(
    toStatement('Sign in to "Zoë\'s <app>" {beta}\n%100'),
    "Sign in to Zo's app beta100",
  );
  const text = message({ statement: toStatement("Sign in to `naughty|name`\\") });
  assert.ok(referenceAccepts(text));
  assert.equal(parseSiweMessage(text).statement, "Sign in to naughtyname");
});

Deno.test("the siwe package's messages parse: every optional field, with and without statements", () => {
  const base = {
    domain: "app.example.com",
    address: account.address,
    uri: `${ORIGIN}/login?next=%2Fsettings#top`,
    version: "1",
    chainId: 137,
    nonce: "n0nce0000000000X",
    issuedAt: "2026-11-22T09:59:00Z",
  };
  const variants: Array<Record<string, unknown>> = [
    {},
    { statement: "I accept the terms: https://app.example.com/tos" },
    { statement: "" },
    { scheme: "https" },
    {
      expirationTime: "2026-11-22T10:10:00.123456+01:00",
      notBefore: "2026-11-22T09:00:00-05:30",
      requestId: "req-1%20a",
      resources: [
        "ipfs://bafybeiemxf5abjwjbikoz4mc3a3dla6ual3jsgpdr4cjr3oz3evfyavhwq/",
        `${ORIGIN}/x`,
      ],
    },
    { resources: [] },
  ];
  for (const variant of variants) {
    const text = new SiweMessage({ ...base, ...variant }).prepareMessage();
    const fields = parseSiweMessage(text);
    assert.equal(fields.address, account.address, text);
    assert.equal(fields.domain, "app.example.com");
    assert.equal(fields.uri, base.uri);
    assert.equal(fields.chainId, 137);
    assert.equal(fields.nonce, base.nonce);
    assert.equal(fields.issuedAt.toISOString(), "2026-11-22T09:59:00.000Z");
    assert.equal(fields.statement, variant.statement || undefined);
    assert.equal(fields.scheme, variant.scheme);
    if (variant.expirationTime) {
      assert.equal(fields.expirationTime?.toISOString(), "2026-11-22T09:10:00.123Z");
      assert.equal(fields.notBefore?.toISOString(), "2026-11-22T14:30:00.000Z");
      assert.equal(fields.requestId, "req-1%20a");
      assert.deepEqual(fields.resources, variant.resources);
    }
  }
});

Deno.test("malformed messages are invalid_message, and the reference refuses each of them too", () => {
  const good = message();
  const lines = good.split("\n");
  const without = (index: number) => lines.filter((_, i) => i !== index).join("\n");
  const cases: Record<string, string> = {
    "lowercase address (not EIP-55)": good.replace(account.address, account.address.toLowerCase()),
    "mis-cased address": good.replace(
      account.address,
      account.address.slice(0, 2) +
        [...account.address.slice(2)].map((c) =>
          c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()
        ).join(""),
    ),
    "trailing newline": `${good}\n`,
    "CRLF line ends": good.replaceAll("\n", "\r\n"),
    "text after the last field": `${good}\nPlease sign quickly.`,
    "text before the header": `Hello\n${good}`,
    "no Issued At": without(lines.findIndex((l) => l.startsWith("Issued At: "))),
    "no Nonce": without(lines.findIndex((l) => l.startsWith("Nonce: "))),
    "no blank line after the statement": without(4),
    "fields out of order": good.replace(/(Version: 1)\n(Chain ID: 1)/, "$2\n$1"),
    "Version 2": good.replace("Version: 1", "Version: 2"),
    "short nonce": good.replace(/Nonce: \w+/, "Nonce: abc123"),
    "nonce with a dash": good.replace(/Nonce: \w+/, "Nonce: abcdefgh-1234567"),
    "chain id in hex": good.replace("Chain ID: 1", "Chain ID: 0x1"),
    "non-date Issued At": good.replace(/Issued At: .*/, "Issued At: yesterday"),
    "30 February": good.replace(/Issued At: .*/, "Issued At: 2026-02-30T10:00:00Z"),
    "hour 24": good.replace(/Issued At: .*/, "Issued At: 2026-11-22T24:00:00Z"),
    "no time zone": good.replace(/Issued At: .*/, "Issued At: 2026-11-22T10:00:00"),
    "space in the URI": good.replace(`URI: ${ORIGIN}/settings`, `URI: ${ORIGIN}/set tings`),
    "broken percent-escape in the URI": good.replace("/settings", "/%zz"),
    "two fragments in the URI": good.replace("/settings", "/a#b#c"),
    "statement with a quote": good.replace("Sign in to the test app.", 'Sign in to "the" app.'),
    "statement over two lines": good.replace("Sign in to the test app.", "Sign in\nto the app."),
    "header with a path": good.replace("app.example.com wants", "app.example.com/x wants"),
    "header wording changed": good.replace("sign in with your", "log in with your"),
  };
  for (const [why, text] of Object.entries(cases)) {
    throwsCode(() => parseSiweMessage(text), "invalid_message", why);
    assert.equal(referenceAccepts(text), false, `the reference accepts "${why}"`);
  }
  // Chain 0 is no EIP-155 chain, and the nonce route refuses it; the reference accepts it.
  throwsCode(
    () => parseSiweMessage(good.replace("Chain ID: 1", "Chain ID: 0")),
    "invalid_message",
    "chain 0",
  );
  throwsCode(() => parseSiweMessage("x".repeat(4097)), "invalid_message", "too long");
  throwsCode(() => parseSiweMessage(""), "invalid_message", "empty");
});

/** A message of the test account with this first-line domain and this URI, otherwise valid. */
function withAuthority(domain: string, uri: string): string {
  return message().replace(/^.* wants you/, `${domain} wants you`).replace(
    `URI: ${ORIGIN}/settings`,
    `URI: ${uri}`,
  );
}

Deno.test("domains and URIs follow RFC 3986 as EIP-4361 says: IPv6 literals in, an empty domain out", () => {
  // Written here from RFC 3986's authority grammar (the siwe package does not ship its parsing
  // vectors); each verdict is also checked against the reference parser.
  const accepted: Array<[string, string]> = [
    ["[::1]:8080", "http://[::1]:8080/"],
    ["[::1]", "http://[::1]/settings"],
    ["[::]", "https://[::]:0"],
    ["[2001:db8::7]", "https://[2001:db8::7]/x?y=1#z"],
    ["[2001:DB8:0:0:8:800:200C:417A]:443", "https://[2001:db8::8:800:200c:417a]/"],
    ["[1:2:3:4:5:6:7:8]", "https://[1:2:3:4:5:6:7::]"],
    ["[::ffff:127.0.0.1]:80", "http://[::ffff:127.0.0.1]:80/"],
    ["[v7.fe80::1]", "https://app.example.com"], // IPvFuture: grammatical, matches no origin
    ["https://[::1]:8080", "https://[::1]:8080/"],
    ["test@[::1]:8080", "http://[::1]:8080/"],
    ["127.0.0.1:8080", "http://127.0.0.1:8080/"],
    ["test@127.0.0.1", "https://app.example.com"],
    ["[::1]:", "http://[::1]/"],
  ];
  for (const [domain, uri] of accepted) {
    const text = withAuthority(domain, uri);
    const fields = parseSiweMessage(text);
    const reference = new SiweMessage(text);
    assert.equal(fields.domain, domain.replace(/^https:\/\//, ""), domain);
    assert.equal(fields.domain, reference.domain, domain);
    assert.equal(fields.uri, uri);
    assert.equal(reference.uri, uri);
  }
  const refused: Array<[string, string, string]> = [
    ["empty domain", "", `${ORIGIN}/settings`],
    ["empty domain after a scheme", "https://", `${ORIGIN}/settings`],
    ["unclosed IPv6 literal", "[::1", `${ORIGIN}/settings`],
    ["text after the IPv6 literal", "[::1]]", `${ORIGIN}/settings`],
    ["three colons", "[:::1]", `${ORIGIN}/settings`],
    ["nine groups", "[1:2:3:4:5:6:7:8:9]", `${ORIGIN}/settings`],
    ["two double colons", "[1::2::3]", `${ORIGIN}/settings`],
    ["a five-digit group", "[12345::]", `${ORIGIN}/settings`],
    ["an IPv4 tail over 255", "[::1.2.3.256]", `${ORIGIN}/settings`],
    ["a zone id (not in RFC 3986)", "[fe80::1%25eth0]", `${ORIGIN}/settings`],
    ["empty brackets", "[]", `${ORIGIN}/settings`],
    ["unclosed IPv6 literal in the URI", "app.example.com", "http://[::1"],
    ["text after the IPv6 literal in the URI", "app.example.com", "http://[::1]x/"],
  ];
  for (const [why, domain, uri] of refused) {
    const text = withAuthority(domain, uri);
    throwsCode(() => parseSiweMessage(text), "invalid_message", why);
    assert.equal(referenceAccepts(text), false, `the reference accepts ${why}`);
  }
  // Stricter than the reference, which takes an authority with no host: no site has one.
  for (const domain of [":8080", "@", "user@", "user@:8080"]) {
    const text = withAuthority(domain, `${ORIGIN}/settings`);
    throwsCode(() => parseSiweMessage(text), "invalid_message", domain);
    assert.equal(referenceAccepts(text), true, domain);
  }
});

Deno.test("an IPv6 origin matches messages for its own host and port, written as URL.host writes it", () => {
  const ipv6: SiwePolicy = { ...policy, origins: ["http://[::1]:8080", ORIGIN] };
  const fields = checkSiweMessage(withAuthority("[::1]:8080", "http://[::1]:8080/settings"), ipv6);
  assert.equal(fields.domain, new URL("http://[::1]:8080").host);
  checkSiweMessage(withAuthority("http://[::1]:8080", "http://[::1]:8080/"), ipv6);
  // The URI is compared as a URL, so its own spelling of the address may differ.
  checkSiweMessage(withAuthority("[::1]:8080", "http://[0:0::1]:8080/"), ipv6);
  checkSiweMessage(withAuthority("[::1]", "http://[::1]/"), {
    ...policy,
    origins: ["http://[::1]"],
  });
  const cases: Array<[string, string, string]> = [
    ["[::1]:8081", "http://[::1]:8080/", "domain_not_allowed"],
    ["[::2]:8080", "http://[::1]:8080/", "domain_not_allowed"],
    ["[::1]", "http://[::1]:8080/", "domain_not_allowed"],
    ["https://[::1]:8080", "http://[::1]:8080/", "domain_not_allowed"],
    // The domain is compared as text, the way wallets compare it with the page's host.
    ["[0:0::1]:8080", "http://[::1]:8080/", "domain_not_allowed"],
    ["[::1]:8080", "http://[::2]:8080/", "uri_not_allowed"],
    ["[::1]:8080", "https://[::1]:8080/", "uri_not_allowed"],
    ["[::1]:8080", `${ORIGIN}/settings`, "uri_not_allowed"],
  ];
  for (const [domain, uri, code] of cases) {
    throwsCode(() => checkSiweMessage(withAuthority(domain, uri), ipv6), code, `${domain} ${uri}`);
  }
});

Deno.test("fuzz: whatever the parser accepts, the reference accepts too, with the same fields", () => {
  // The property that keeps wallets' phishing warnings meaningful: a message this server would
  // act on is always one a wallet recognises as a sign-in request (and shows its domain for).
  const seed = seedFromEnv("SIWE_FUZZ_SEED");
  const rng = new Rng(seed);
  const alphabet = ["\n", "\r", " ", ":", "/", "#", "%", "@", "[", "]", "x", "0", "Z", "-", "\t"];
  const seeds = [
    message(),
    message({ statement: undefined }),
    message({ scheme: "https", requestId: "r1", resources: [`${ORIGIN}/a`, "urn:x:y"] }),
    message({ notBefore: NOW }),
    new SiweMessage({
      domain: "app.example.com",
      address: account.address,
      uri: ORIGIN,
      version: "1",
      chainId: 1,
      nonce: "abcdefgh12345678",
      issuedAt: "2026-11-22T09:59:00+02:00",
      statement: "",
    }).prepareMessage(),
  ];
  let accepted = 0;
  for (let i = 0; i < 3000; i++) {
    let text = rng.pick(seeds);
    for (let edits = rng.between(1, 3); edits > 0; edits--) {
      const at = rng.int(text.length + 1);
      const lines = text.split("\n");
      const line = rng.int(lines.length);
      switch (rng.int(6)) {
        case 0:
          text = text.slice(0, at) + text.slice(at + 1);
          break;
        case 1:
          text = text.slice(0, at) + rng.pick(alphabet) + text.slice(at);
          break;
        case 2:
          text = text.slice(0, at) + rng.pick(alphabet) + text.slice(at + 1);
          break;
        case 3:
          lines.splice(line, 0, lines[rng.int(lines.length)]);
          text = lines.join("\n");
          break;
        case 4:
          lines.splice(line, 1);
          text = lines.join("\n");
          break;
        default:
          text = text.toUpperCase() === text ? text : text.replace(/[a-z]/, (c) => c.toUpperCase());
      }
    }
    let fields;
    try {
      fields = parseSiweMessage(text);
    } catch (error) {
      assert.ok(error instanceof ServiceError && error.code === "invalid_message", String(error));
      continue;
    }
    accepted += 1;
    let reference: SiweMessage;
    try {
      reference = new SiweMessage(text);
    } catch (error) {
      assert.fail(
        `seed ${seed}: accepted what the reference refuses: ${JSON.stringify(text)}\n${error}`,
      );
    }
    assert.equal(reference.domain, fields.domain, `seed ${seed}: ${JSON.stringify(text)}`);
    assert.equal(reference.address, fields.address);
    assert.equal(reference.uri, fields.uri);
    assert.equal(reference.nonce, fields.nonce);
    assert.equal(reference.chainId, fields.chainId);
    assert.equal(reference.statement || undefined, fields.statement);
    assert.equal(new Date(reference.issuedAt!).getTime(), fields.issuedAt.getTime());
  }
  // Some mutations keep the message valid (a changed statement character, a changed nonce letter):
  // the property above was exercised, not only the refusals.
  assert.ok(accepted > 50, `only ${accepted} mutated messages parsed (seed ${seed})`);
});

Deno.test("policy checks, in order: domain, URI, chain, issued-at, expiry, not-before", () => {
  const ok = checkSiweMessage(message(), policy);
  assert.equal(ok.nonce, "abcdefgh12345678ABCD");
  const cases: Array<[string, string, Partial<SiwePolicy>?]> = [
    [message({ domain: "evil.example" }), "domain_not_allowed"],
    [message({ domain: "app.example.com:8443" }), "domain_not_allowed"],
    [message({ domain: "example.com" }), "domain_not_allowed"],
    // The scheme, when the message names one, must be the origin's.
    [message({ scheme: "http" }), "domain_not_allowed"],
    [message({ uri: "https://evil.example/settings" }), "uri_not_allowed"],
    [message({ uri: "http://app.example.com/settings" }), "uri_not_allowed"],
    [message({ uri: "https://app.example.com@evil.example/" }), "uri_not_allowed"],
    [message({ uri: "urn:app.example.com" }), "uri_not_allowed"],
    [message({ domain: "evil.example", uri: "https://evil.example" }), "domain_not_allowed"],
    [message({ chainId: 5 }), "chain_not_allowed", { chainIds: [1, 10] }],
    [message({ issuedAt: new Date(NOW.getTime() + 61_000) }), "issued_in_future"],
    [message({ expirationTime: NOW }), "message_expired"],
    [message({ expirationTime: new Date(NOW.getTime() - 1) }), "message_expired"],
    [message({ notBefore: new Date(NOW.getTime() + 61_000) }), "message_not_yet_valid"],
    // The first failing check is the one reported.
    [message({ uri: "https://evil.example", chainId: 5 }), "uri_not_allowed", { chainIds: [1] }],
    [message({ chainId: 5, expirationTime: NOW }), "chain_not_allowed", { chainIds: [1] }],
  ];
  for (const [text, code, override] of cases) {
    throwsCode(() => checkSiweMessage(text, { ...policy, ...override }), code, text);
  }
  // Inside the allowed skew, at the edges, and with an allow-list that includes the chain.
  checkSiweMessage(message({ issuedAt: new Date(NOW.getTime() + 59_000) }), policy);
  // Not Before gets the same skew: a wallet whose clock runs 5 s fast set both to its "now".
  const fast = new Date(NOW.getTime() + 5_000);
  checkSiweMessage(message({ issuedAt: fast, notBefore: fast }), policy);
  checkSiweMessage(message({ notBefore: new Date(NOW.getTime() + 59_000) }), policy);
  checkSiweMessage(
    message({ notBefore: NOW, expirationTime: new Date(NOW.getTime() + 1) }),
    policy,
  );
  checkSiweMessage(message({ chainId: 10 }), { ...policy, chainIds: [1, 10] });
  checkSiweMessage(message({ scheme: "https" }), policy);
  checkSiweMessage(message({ domain: "b.example", uri: "http://b.example/" }), {
    ...policy,
    origins: [ORIGIN, "http://b.example"],
  });
});

Deno.test("a real signature verifies; another signer's is signature_mismatch", async () => {
  const text = message();
  const signature = await account.signMessage({ message: text });
  verifySignature(text, signature, account.address);
  verifySignature(text, signature, account.address.toLowerCase());
  const other = privateKeyToAccount(generatePrivateKey());
  const otherSignature = await other.signMessage({ message: text });
  throwsCode(() => verifySignature(text, otherSignature, account.address), "signature_mismatch");
  // One character changed after signing: the signature recovers some other address.
  throwsCode(
    () => verifySignature(text.replace("test app", "test apP"), signature, account.address),
    "signature_mismatch",
  );
});

Deno.test("the high-s twin of a valid signature is refused, though it recovers the same signer", async () => {
  const text = message();
  const signature = await account.signMessage({ message: text });
  const r = signature.slice(2, 66);
  const s = hexToBigInt(`0x${signature.slice(66, 130)}`);
  const v = Number.parseInt(signature.slice(130), 16);
  const twin = `0x${r}${(N - s).toString(16).padStart(64, "0")}${
    (v === 27 ? 28 : 27).toString(16)
  }`;
  // The twin is a working signature for the same key (the malleability being guarded against)…
  assert.equal(
    await recoverMessageAddress({ message: text, signature: twin as Hex }),
    account.address,
  );
  // …which verification refuses, so one signing can never be presented as two different proofs.
  throwsCode(() => verifySignature(text, twin, account.address), "invalid_signature");
});

Deno.test("malformed signatures are invalid_signature", async () => {
  const text = message();
  const signature = await account.signMessage({ message: text });
  const body = signature.slice(2);
  const r = body.slice(0, 64);
  const s = body.slice(64, 128);
  const cases: Record<string, string> = {
    empty: "",
    "no 0x": body,
    "0x only": "0x",
    "64 bytes (EIP-2098 compact)": `0x${r}${s}`,
    "66 bytes": `${signature}00`,
    "not hex": `0x${"z".repeat(130)}`,
    "v = 2": `0x${r}${s}02`,
    "v = 29": `0x${r}${s}1d`,
    "s = 0": `0x${r}${"0".repeat(64)}1b`,
    "r = 0": `0x${"0".repeat(64)}${s}1b`,
    "all zero": `0x${"0".repeat(130)}`,
    "r = n": `0x${N.toString(16)}${s}1b`,
    "spaces": ` ${signature}`,
  };
  for (const [why, bad] of Object.entries(cases)) {
    throwsCode(() => verifySignature(text, bad, account.address), "invalid_signature", why);
  }
  // v as 0/1 (some signers) is the same signature as 27/28.
  const v = Number.parseInt(body.slice(128), 16);
  verifySignature(text, `0x${r}${s}0${v - 27}`, account.address);
});
