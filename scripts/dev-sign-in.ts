/**
 * `deno task sign-in [url]`: signs in to a running server as a new throwaway wallet and prints
 * shell `export` lines for the docs' curl examples, so they can be tried with nothing but a shell:
 *
 *   eval "$(npx -y deno@2.9.6 task -q sign-in)"
 *   curl "$BASE/api/secrets" -H "Authorization: Bearer $TOKEN"
 *
 * BASE is the server's URL: the argument, else the local server's (PORT, else 54321). TOKEN (and
 * ACCESS_TOKEN) and REFRESH_TOKEN are the new session's; OTHER_DEVICE_TOKEN is the access token of
 * a second session of the same wallet, as another device would hold; PROOF is one more signed
 * wallet-proof body for that wallet, not yet used (its nonce is good for ten minutes), for trying
 * POST /api/auth/wallet-proof itself. SERVER_REVEAL_TOKEN is exported only for a server on this
 * machine that takes the live-run credential `development` in the development keys
 * `deno task start` keeps in .local/dev-keys.json (read from the working directory, as the server
 * reads it): a server in development that generated them. The wallet's key is made here and
 * forgotten: each run is a new creator.
 *
 * For the acts that need the wallet again (unlock, signing sessions out, deleting the account), it
 * keeps the wallet's key in .local/sign-in-wallets/ (scripts/lib/dev-wallets.ts) and defines the
 * shell function `vault_sign <purpose> [fields]` (`deno task sign-act`, scripts/dev-sign-act.ts),
 * which prints the act's signed body; SIGN_IN_WALLET names the wallet, OTHER_DEVICE_SESSION_ID
 * the second session's id (for signing it out).
 */
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { DEFAULT_DEV_KEYS_PATH } from "../server/dev-keys.ts";
import {
  DEV_WALLETS_DIR,
  forgetOldDevWallets,
  keepDevWallet,
  KEPT_DAYS,
} from "./lib/dev-wallets.ts";

const base = (Deno.args[0] ?? `http://127.0.0.1:${Deno.env.get("PORT") || "54321"}`)
  .replace(/\/+$/, "");
/** Where the URL came from, for the message when nothing answers there. */
const baseFrom = Deno.args[0] !== undefined
  ? "the URL given after sign-in"
  : Deno.env.get("PORT")
  ? "PORT"
  : "the default port; PORT unset";
const privateKey = generatePrivateKey();
const account = privateKeyToAccount(privateKey);

/** How long each call may take before the sign-in gives up. */
const TIMEOUT_MS = 10_000;

/** Sends `body` as JSON to the server's /api; the answer's status and JSON (null if none). */
async function send(
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; answer: unknown }> {
  try {
    const response = await fetch(`${base}/api${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    return { status: response.status, answer: await response.json().catch(() => null) };
  } catch (error) {
    fail(
      `no answer from ${base} (${baseFrom}; ${printable(error)}): is the server running ` +
        "(deno task start)? For a server on another port, set PORT as for the server " +
        "(PORT=8000 deno task sign-in), or give its URL (deno task sign-in http://127.0.0.1:8000).",
    );
  }
}

/** POSTs `body` as JSON to the server's /api; exits with the server's own error when it refuses. */
async function post(path: string, body: unknown): Promise<Record<string, unknown>> {
  const { status, answer } = await send(path, body);
  const error = (answer as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  if (status < 200 || status > 299) {
    fail(`${path} answered ${status}: ${printable(error?.code)} ${printable(error?.message)}`);
  }
  if (answer === null || typeof answer !== "object" || Array.isArray(answer)) {
    fail(`${path} answered ${status} without a JSON object`);
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

/** Whether `url` names this machine: the only place the development keys may be sent. */
function isLoopback(url: string): boolean {
  const host = new URL(url).hostname;
  return host === "localhost" || host === "[::1]" || /^127(\.\d{1,3}){3}$/.test(host);
}

/**
 * The live-run credential in the development keys, when the server takes it; otherwise null, and
 * why. The server looks a credential up in the reveal itself, so the probe is a reveal with the
 * new throwaway wallet's session, which has nothing stored: it reads and releases nothing.
 */
async function devRevealToken(
  accessToken: string,
): Promise<{ token: string } | { token: null; why: string }> {
  if (!isLoopback(base)) return { token: null, why: `${base} is not on this machine` };
  let keys: unknown;
  try {
    keys = JSON.parse(await Deno.readTextFile(DEFAULT_DEV_KEYS_PATH));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      return { token: null, why: `no ${DEFAULT_DEV_KEYS_PATH} here` };
    }
    return { token: null, why: `${DEFAULT_DEV_KEYS_PATH} unreadable (${printable(error)})` };
  }
  const candidate = (keys as { SERVER_REVEAL_TOKEN?: unknown } | null)?.SERVER_REVEAL_TOKEN;
  if (typeof candidate !== "string" || !/^[\x21-\x7e]+$/.test(candidate)) {
    return { token: null, why: `${DEFAULT_DEV_KEYS_PATH} holds no usable SERVER_REVEAL_TOKEN` };
  }
  const { status } = await send("/secrets/reveal", {}, {
    "authorization": `Bearer ${accessToken}`,
    "x-service-server-secret": candidate,
  });
  if (status === 200) return { token: candidate };
  return {
    token: null,
    why: `the server does not take the one in ${DEFAULT_DEV_KEYS_PATH} (not in development?)`,
  };
}

/** The `session_id` claim of an access token the service issued (a JWT). */
function sessionIdOf(accessToken: string): string {
  try {
    const payload = accessToken.split(".")[1].replaceAll("-", "+").replaceAll("_", "/");
    const id = (JSON.parse(atob(payload.padEnd(Math.ceil(payload.length / 4) * 4, "="))) as {
      session_id?: unknown;
    }).session_id;
    if (typeof id === "string" && /^[0-9a-f-]{36}$/.test(id)) return id;
  } catch {
    // Fall through: the same message for any token without a usable claim.
  }
  fail("the sign-in answer's access_token has no usable session_id");
}

/** Single-quoted for a POSIX shell: nothing inside is expanded. */
const quoted = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`;

const session = await post("/auth/wallet-proof", await signedProof());
const otherDevice = await post("/auth/wallet-proof", await signedProof());
const proof = JSON.stringify(await signedProof());
const accessToken = token(session.access_token, "access_token");
const reveal = await devRevealToken(accessToken);
await keepDevWallet(account.address, privateKey).catch((error) =>
  fail(`could not keep the wallet's key in ${DEV_WALLETS_DIR} (${printable(error)})`)
);
const forgotten = await forgetOldDevWallets().catch((error) => {
  // The new key is kept; only the clean-up failed, which the next sign-in tries again.
  console.error(`sign-in: could not remove old keys in ${DEV_WALLETS_DIR} (${printable(error)})`);
  return [];
});
if (forgotten.length > 0) {
  console.error(
    `sign-in: removed ${forgotten.length} throwaway wallet key(s) older than ${KEPT_DAYS} days ` +
      `from ${DEV_WALLETS_DIR}`,
  );
}
const exports: Record<string, string> = {
  BASE: base,
  TOKEN: accessToken,
  ACCESS_TOKEN: accessToken,
  REFRESH_TOKEN: token(session.refresh_token, "refresh_token"),
  OTHER_DEVICE_TOKEN: token(otherDevice.access_token, "access_token"),
  OTHER_DEVICE_SESSION_ID: sessionIdOf(token(otherDevice.access_token, "access_token")),
  PROOF: proof,
  SIGN_IN_WALLET: account.address,
};
if (reveal.token !== null) exports.SERVER_REVEAL_TOKEN = reveal.token;
for (const [name, value] of Object.entries(exports)) console.log(`export ${name}=${quoted(value)}`);
// The signing helper: this Deno, this repository's task, whatever the shell's directory.
const config = new URL("../deno.json", import.meta.url).pathname;
console.log(
  `vault_sign() { npx -y deno@${Deno.version.deno} task -q --config ${
    quoted(config)
  } sign-act "$@"; }`,
);
console.error(`sign-in: signed in at ${base} as ${account.address} (a new throwaway wallet)`);
console.error(
  reveal.token === null
    ? `sign-in: SERVER_REVEAL_TOKEN not set: ${reveal.why}`
    : `sign-in: SERVER_REVEAL_TOKEN set from ${DEFAULT_DEV_KEYS_PATH} (the server's ` +
      "development live-run credential, every type)",
);
