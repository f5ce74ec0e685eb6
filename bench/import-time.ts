/**
 * Prints, as JSON, how long a fresh process takes to import one module (the handler module of a
 * function): `deno run bench/import-time.ts functions/wallet-proof/handler.ts`.
 */
const target = new URL(Deno.args[0], new URL("../", import.meta.url));
const start = performance.now();
await import(target.href);
console.log(JSON.stringify({ module: Deno.args[0], importMs: performance.now() - start }));
