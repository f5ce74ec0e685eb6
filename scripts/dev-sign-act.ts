/**
 * `deno task sign-act <purpose> [fields]`: the signature of an act that needs the wallet again
 * (`unlock`, `sign_out_sessions`, `delete_account`), made for the shell `deno task sign-in` set up.
 * `sign-in` defines the shell function `vault_sign`, which runs this task:
 *
 *   curl -X POST "$BASE/api/secrets/unlock" -H "Authorization: Bearer $TOKEN" \
 *     -H 'content-type: application/json' -d "$(vault_sign unlock)"
 *
 * It asks $BASE for the purpose's nonce as the session $TOKEN (POST /api/auth/confirm/nonce), checks
 * that the message is for the signed-in wallet ($SIGN_IN_WALLET), signs it with that wallet's key
 * (kept in .local/sign-in-wallets/ by sign-in; never printed) and prints the act's JSON body:
 * `{ "message", "signature" }` and the fields of the JSON object given after the purpose (such as
 * `{"sessionIds":[…]}`). Those of the fields the nonce request takes (by the server's own
 * description, GET /api/openapi.json) go with it too, so a message that names them (a sign-out's
 * sessions) names the ones the act sends.
 */
import { privateKeyToAccount } from "viem/accounts";
import { devWalletKey, devWalletPath } from "./lib/dev-wallets.ts";

function fail(message: string): never {
  console.error(`sign-act: ${message}`);
  Deno.exit(1);
}

const [purpose, fieldsText] = Deno.args;
if (purpose === undefined) {
  fail("usage: vault_sign <unlock | sign_out_sessions | delete_account> [JSON object of fields]");
}
let fields: Record<string, unknown> = {};
if (fieldsText !== undefined) {
  try {
    fields = JSON.parse(fieldsText);
  } catch {
    fail(`the fields after the purpose are not JSON: ${fieldsText.slice(0, 100)}`);
  }
  if (fields === null || typeof fields !== "object" || Array.isArray(fields)) {
    fail("the fields after the purpose must be a JSON object");
  }
}

const variable = (name: string) =>
  Deno.env.get(name) || fail(`$${name} is not set: run eval "$(… task -q sign-in)" first`);
const base = variable("BASE").replace(/\/+$/, "");
const token = variable("TOKEN");
const address = variable("SIGN_IN_WALLET");
const key = await devWalletKey(address).catch((error) => fail(String(error)));
if (key === null) fail(`no key for ${address} in ${devWalletPath(address)} (another machine?)`);
const account = privateKeyToAccount(key);

/** The fields the server's confirmation-nonce request takes, from its OpenAPI description. */
async function nonceRequestFields(): Promise<Set<string>> {
  type Json = Record<string, unknown>;
  try {
    const response = await fetch(`${base}/api/openapi.json`, {
      signal: AbortSignal.timeout(10_000),
    });
    const document = await response.json() as Json;
    const at = (pointer: string) =>
      pointer.slice(2).split("/").reduce<unknown>(
        (value, key) => (value as Json)?.[key.replaceAll("~1", "/").replaceAll("~0", "~")],
        document,
      ) as Json | undefined;
    const schema = at(
      "#/paths/~1api~1auth~1confirm~1nonce/post/requestBody/content/application~1json/schema",
    );
    const resolved = typeof schema?.$ref === "string" ? at(schema.$ref) : schema;
    return new Set(Object.keys((resolved?.properties ?? {}) as Json));
  } catch {
    return new Set();
  }
}

const taken = await nonceRequestFields();
const nonceFields = Object.fromEntries(Object.entries(fields).filter(([name]) => taken.has(name)));

let answer: { message?: unknown; error?: { code?: unknown; message?: unknown } } | null;
let status: number;
try {
  const response = await fetch(`${base}/api/auth/confirm/nonce`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ ...nonceFields, purpose }),
    signal: AbortSignal.timeout(10_000),
  });
  status = response.status;
  answer = await response.json().catch(() => null);
} catch (error) {
  fail(`no answer from ${base} (${error instanceof Error ? error.message : error})`);
}
const message = answer?.message;
if (status !== 200 || typeof message !== "string") {
  const code = String(answer?.error?.code ?? "").replace(/\p{Cc}/gu, " ").slice(0, 100);
  fail(`/api/auth/confirm/nonce answered ${status} ${code}`);
}
// The service writes the message; sign only one that names this wallet.
const signer = message.split("\n")[1]?.trim() ?? "";
if (signer.toLowerCase() !== account.address.toLowerCase()) {
  fail("the message is not for the signed-in wallet: nothing signed");
}
const signature = await account.signMessage({ message });
console.log(JSON.stringify({ message, signature, ...fields }));
