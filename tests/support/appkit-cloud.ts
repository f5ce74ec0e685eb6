/**
 * What a page with @reown/appkit 1.8 and its wagmi adapter asks of the network beyond its own
 * servers, answered inside the browser context (Playwright routes a request whatever its host), so
 * the page runs with no network beyond loopback. Reown's cloud, reached with the `projectId`: the
 * project's settings (api.web3modal.org), the wallet list and its images, an account's name and the
 * chain (rpc.walletconnect.org), analytics (pulse.walletconnect.org) and AppKit's typeface
 * (fonts.reown.com). And the analytics of the Coinbase Wallet and Base Account SDKs, which the
 * adapter sets up by default (cca-lite.coinbase.com): Base Account's cannot be switched off, as
 * AppKit 1.8.24 never applies its `enableBaseAccount` option.
 *
 * Each answer is the smallest the page takes without a console error: a project whose dashboard
 * enables no cloud feature (no email or social login, swaps, on-ramp, Reown Authentication), no
 * wallet beyond those the browser announces, an account with no name, the chain read through the
 * caller's stand-in node, analytics taken. Nothing is refused here, since Chromium logs a refused
 * or failed request as a console error; a request this module does not know is left to the
 * caller. The typeface is answered empty: Chromium then warns (not errs) that it cannot decode it,
 * and the modal uses the page's font.
 */
import type { Route } from "playwright-core";

/** A JSON-RPC endpoint (the caller's stand-in Ethereum node): a call or batch in, its answer out. */
// deno-lint-ignore no-explicit-any
export type JsonRpc = (calls: any) => unknown;

interface Answer {
  readonly status?: number;
  readonly type?: string;
  readonly body: string;
}

/**
 * Answers `route` if it is a request this module knows, and says whether it did; each request
 * answered is added to `answered` as "METHOD host/path".
 */
export async function answerAppKitCloud(
  route: Route,
  rpc: JsonRpc,
  answered: string[],
): Promise<boolean> {
  const request = route.request();
  const url = new URL(request.url());
  const method = request.method();
  const host = url.protocol === "https:" && Object.hasOwn(HOSTS, url.hostname)
    ? HOSTS[url.hostname]
    : null;
  const answer = host === null
    ? null
    : method === "OPTIONS"
    ? PREFLIGHT
    : host(url.pathname, method, request.postData(), url, rpc);
  if (answer === null) return false;
  answered.push(`${method} ${url.hostname}${url.pathname}`);
  const headers: Record<string, string> = {
    // These hosts answer any origin.
    "access-control-allow-origin": "*",
    "access-control-allow-headers": "*",
    "access-control-allow-methods": "GET, POST",
  };
  if (answer.type !== undefined) headers["content-type"] = answer.type;
  await route.fulfill({ status: answer.status ?? 200, headers, body: answer.body });
  return true;
}

const PREFLIGHT: Answer = { status: 204, body: "" };

const json = (value: unknown): Answer => ({
  type: "application/json",
  body: JSON.stringify(value),
});

/** An image for any wallet, network or connector image AppKit asks for. */
const IMAGE: Answer = {
  type: "image/svg+xml",
  body: '<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>',
};

type Host = (
  path: string,
  method: string,
  body: string | null,
  url: URL,
  rpc: JsonRpc,
) => Answer | null;

const HOSTS: Record<string, Host> = {
  "api.web3modal.org"(path, method) {
    if (method !== "GET") return null;
    // The project's settings: no feature enabled on its dashboard, no usage limit reached.
    if (path === "/appkit/v1/config") return json({ features: [] });
    if (path === "/appkit/v1/project-limits") {
      return json({ planLimits: { tier: "none", isAboveRpcLimit: false, isAboveMauLimit: false } });
    }
    if (path === "/getAnalyticsConfig") return json({ isAnalyticsEnabled: false });
    // The wallet explorer: no wallet beyond those the browser announces.
    if (path === "/getWallets") return json({ count: 0, data: [] });
    if (/^\/(public\/getAssetImage|getWalletImage)\/[\w-]+$/.test(path)) return IMAGE;
    return null;
  },

  "rpc.walletconnect.org"(path, method, body, url, rpc) {
    // Reown's RPC, AppKit's default transport for its networks: the stand-in node.
    if (method === "POST" && /^\/v1\/?$/.test(path) && url.searchParams.has("chainId")) {
      return json(rpc(JSON.parse(body ?? "null")));
    }
    if (method !== "GET") return null;
    // An account with no name or avatar.
    if (/^\/v1\/identity\/0x[0-9a-fA-F]{40}$/.test(path)) return json({ name: null, avatar: null });
    return null;
  },

  "pulse.walletconnect.org"(path, method) {
    // AppKit's and WalletConnect's analytics: taken.
    return method === "POST" && (path === "/batch" || path === "/e") ? json({}) : null;
  },

  "fonts.reown.com"(path, method) {
    return method === "GET" && /^\/[\w-]+\.woff2?$/.test(path)
      ? { type: "font/woff2", body: "" }
      : null;
  },

  "cca-lite.coinbase.com"(path, method) {
    // The Coinbase Wallet and Base Account SDKs' analytics: taken.
    return method === "POST" && (path === "/amp" || path === "/metrics") ? json({}) : null;
  },
};
