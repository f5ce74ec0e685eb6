/**
 * Runs one function's `index.ts` on a given port, for a Deno that does not read
 * DENO_SERVE_ADDRESS (older than 2.2): Deno.serve is given FUNCTION_PORT on 127.0.0.1, as the
 * edge runtime gives a function its socket, and the entry is then imported unchanged. Needs only
 * --allow-env and --allow-net, like the function itself.
 */
// Literal specifiers: without --allow-read, a Deno this old loads only imports it can see ahead.
const ENTRIES: Record<string, () => Promise<unknown>> = {
  "api": () => import("../../functions/api/index.ts"),
  "wallet-proof": () => import("../../functions/wallet-proof/index.ts"),
  "user-secrets": () => import("../../functions/user-secrets/index.ts"),
};

const entry = ENTRIES[Deno.env.get("FUNCTION_NAME") ?? ""];
const port = Number(Deno.env.get("FUNCTION_PORT"));
if (entry === undefined || !Number.isInteger(port)) {
  throw new Error("serve-on-port needs FUNCTION_NAME (a function) and FUNCTION_PORT");
}
const serve = Deno.serve;
const onPort = (handler: Deno.ServeHandler) =>
  serve({ hostname: "127.0.0.1", port, onListen() {} }, handler);
Object.defineProperty(Deno, "serve", { value: onPort });
await entry();
