/**
 * `deno task sign-in [url]`: signs in to a running server as a new throwaway wallet and prints
 * shell `export` lines for the docs' curl examples, so they can be tried with nothing but a shell:
 *
 *   eval "$(npx -y deno@2.9.6 task -q sign-in)"
 *   curl http://127.0.0.1:54321/api/secrets -H "Authorization: Bearer $TOKEN"
 *
 * TOKEN (and ACCESS_TOKEN) and REFRESH_TOKEN are the new session's; PROOF is a second signed
 * wallet-proof body for the same wallet, not yet used (its nonce is good for ten minutes), for
 * trying POST /api/auth/wallet-proof itself. The wallet's key is made here and forgotten: each run
 * is a new creator. The default URL is the local server's (PORT, else 54321).
 */
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";

const base = (Deno.args[0] ?? `http://127.0.0.1:${Deno.env.get("PORT") || "54321"}`)
  .replace(/\/+$/, "");
const account = privateKeyToAccount(generatePrivateKey());

/** How long each call may take before the sign-in gives up. */
const TIMEOUT_MS = 10_000;

/** POSTs `body` as JSON to the server's /api; exits with the server's own error when it refuses. */
async function post(path: string, body: unknown): Promise<Record<string, unknown>> {
  let response: Response;
  let answer: unknown;
  try {
    response = await fetch(`${base}/api${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    answer = await response.json().catch(() => null);
  } catch (error) {
    fail(`no answer from ${base} (${printable(error)}): is the server running (deno task start)?`);
  }
  const error = (answer as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  if (!response.ok) {
    fail(
      `${path} answered ${response.status}: ${printable(error?.code)} ${printable(error?.message)}`,
    );
  }
  if (answer === null || typeof answer !== "object" || Array.isArray(answer)) {
    fail(`${path} answered ${response.status} without a JSON object`);
  }
  return answer as Record<string, unknown>;
}

/** A token as the service issues them (a JWT, base64url): anything else is not exported. */
function token(value: unknown, name: string): string {
  if (typeof value !== "string" || !/^[A-Za-z0-9._-]+$/.test(value)) {
    fail(`the sign-in answer has no usable ${name}`);
  }
  return value;
}

/** Text from the server or an error, without control characters, for the terminal. */
function printable(value: unknown): string {
  const text = value instanceof Error ? value.message : String(value ?? "");
  return text.replace(/\p{Cc}/gu, " ").slice(0, 200);
}

function fail(message: string): never {
  console.error(`sign-in: ${message}`);
  Deno.exit(1);
}

/** A wallet-proof body: the server's own EIP-4361 message for this wallet, signed. */
async function signedProof(): Promise<{ message: string; signature: string }> {
  const { message } = await post("/auth/nonce", { address: account.address });
  if (typeof message !== "string") fail("/auth/nonce answered without a message");
  return { message, signature: await account.signMessage({ message }) };
}

/** Single-quoted for a POSIX shell: nothing inside is expanded. */
const quoted = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`;

const session = await post("/auth/wallet-proof", await signedProof());
const proof = JSON.stringify(await signedProof());
const accessToken = token(session.access_token, "access_token");
const exports = {
  TOKEN: accessToken,
  ACCESS_TOKEN: accessToken,
  REFRESH_TOKEN: token(session.refresh_token, "refresh_token"),
  PROOF: proof,
};
for (const [name, value] of Object.entries(exports)) console.log(`export ${name}=${quoted(value)}`);
console.error(`sign-in: signed in at ${base} as ${account.address} (a new throwaway wallet)`);
