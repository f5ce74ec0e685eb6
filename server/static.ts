/**
 * The settings page (client/) and the browser client (sdk/src/), served by the local server with no
 * build step.
 *
 * The client is TypeScript restricted to erasable syntax (no enums, namespaces or parameter
 * properties). Browsers cannot run .ts, so on each request the file's types are stripped with the
 * runtime's built-in `stripTypeScriptTypes` (node:module, which Deno implements): type annotations
 * become whitespace, so line and column numbers stay those of the source and no source map is
 * needed, and an edit shows on the next reload. Relative `./x.ts` imports are rewritten to the
 * public URL of x.
 *
 * Only the files listed here are served: a request names a route, never a path on disk, so there
 * is nothing to traverse.
 */
import * as nodeModule from "node:module";
import { ServiceError } from "../functions/_shared/http/errors.ts";
import type { Handler } from "../functions/_shared/http/router.ts";
import * as registered from "../protocol/secret-types.ts";

const ROOT = new URL("../", import.meta.url);

type Asset =
  | { readonly kind: "typescript"; readonly file: string }
  | { readonly kind: "file"; readonly file: string; readonly contentType: string }
  | { readonly kind: "json"; readonly body: () => unknown };

const JS = "text/javascript; charset=utf-8";

/** Public path → what is served there. */
export const STATIC_ASSETS: Readonly<Record<string, Asset>> = {
  "/settings": {
    kind: "file",
    file: "client/settings.html",
    contentType: "text/html; charset=utf-8",
  },
  "/settings/app.js": { kind: "typescript", file: "client/settings.ts" },
  "/settings/render.js": { kind: "typescript", file: "client/settings-render.ts" },
  "/settings/controls.js": { kind: "typescript", file: "client/settings-controls.ts" },
  "/settings/controls-render.js": {
    kind: "typescript",
    file: "client/settings-controls-render.ts",
  },
  "/settings/styles.css": {
    kind: "file",
    file: "client/settings.css",
    contentType: "text/css; charset=utf-8",
  },
  "/settings/registry.json": { kind: "json", body: registry },
  // The browser client (sdk/src/), at the URLs pages import it from.
  "/client/vault-client.js": { kind: "typescript", file: "sdk/src/browser.ts" },
  "/client/creator-controls.js": { kind: "typescript", file: "sdk/src/creator-controls.ts" },
  "/client/eip1193.js": { kind: "typescript", file: "sdk/src/eip1193.ts" },
  "/client/errors.js": { kind: "typescript", file: "sdk/src/errors.ts" },
  "/client/service-call.js": { kind: "typescript", file: "sdk/src/service-call.ts" },
  "/client/session-refresh.js": { kind: "typescript", file: "sdk/src/session-refresh.ts" },
  "/client/session-storage.js": { kind: "typescript", file: "sdk/src/session-storage.ts" },
  "/client/sign-in-message.js": { kind: "typescript", file: "sdk/src/sign-in-message.ts" },
};

const PUBLIC_PATH_OF_FILE = new Map(
  Object.entries(STATIC_ASSETS).flatMap(([path, asset]) =>
    asset.kind === "typescript" ? [[asset.file, path] as const] : []
  ),
);

/**
 * The secret-type registry as the page needs it, generated from protocol/secret-types.ts so the
 * purposes shown are the service's own.
 */
function registry() {
  const { PROVIDER_IDS, PROVIDERS, SECRET_TYPE_INFO, SECRET_TYPES, STEP_KINDS } = registered;
  return {
    secretTypes: SECRET_TYPES.map((secretType) => ({
      secretType,
      ...SECRET_TYPE_INFO[secretType],
    })),
    providers: PROVIDER_IDS.map((id) => ({ id, ...PROVIDERS[id] })),
    stepKinds: STEP_KINDS,
  };
}

// The page talks only to its own origin and runs only its own scripts: even injected markup could
// neither run code nor send a typed key elsewhere. EIP-6963 wallet icons are data: URIs.
const PAGE_HEADERS = {
  "content-security-policy": [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; "),
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

export function isStaticPath(pathname: string): boolean {
  return Object.hasOwn(STATIC_ASSETS, normalize(pathname));
}

function normalize(pathname: string): string {
  return pathname === "/settings/" ? "/settings" : pathname;
}

export const serveStatic: Handler = async (request) => {
  const path = normalize(new URL(request.url).pathname);
  const asset = Object.hasOwn(STATIC_ASSETS, path) ? STATIC_ASSETS[path] : undefined;
  if (asset === undefined) throw new ServiceError("not_found", "No such route.");
  if (request.method !== "GET" && request.method !== "HEAD") {
    throw new ServiceError("method_not_allowed", "Use GET.", undefined, { allow: "GET, HEAD" });
  }
  let body: string;
  let contentType: string;
  if (asset.kind === "json") {
    body = JSON.stringify(asset.body());
    contentType = "application/json; charset=utf-8";
  } else if (asset.kind === "typescript") {
    body = await transpile(asset.file);
    contentType = JS;
  } else {
    body = await Deno.readTextFile(new URL(asset.file, ROOT));
    contentType = asset.contentType;
  }
  return new Response(request.method === "HEAD" ? null : body, {
    headers: { ...PAGE_HEADERS, "content-type": contentType },
  });
};

// Typed here rather than by @types/node: an npm package in the same type-check graph can bring an
// older @types/node (ethers pins 22.7, which predates this function) and fail `deno check`.
const { stripTypeScriptTypes } = nodeModule as unknown as {
  stripTypeScriptTypes(code: string, options: { mode: "strip" }): string;
};

/** Strips the types of one client module and points its relative imports at their public URLs. */
async function transpile(file: string): Promise<string> {
  const source = await Deno.readTextFile(new URL(file, ROOT));
  const code = stripTypeScriptTypes(source, { mode: "strip" });
  return code.replace(
    /(\bfrom\s*|\bimport\s*)(["'])(\.{1,2}\/[^"'\n]+\.ts)\2/g,
    (_match, keyword: string, quote: string, specifier: string) => {
      const target = new URL(specifier, new URL(file, ROOT)).href.slice(ROOT.href.length);
      const publicPath = PUBLIC_PATH_OF_FILE.get(target);
      // A module the browser would need but that is not served: fail here, not in the browser.
      if (publicPath === undefined) throw new Error(`${file} imports unserved ${specifier}`);
      return `${keyword}${quote}${publicPath}${quote}`;
    },
  );
}
