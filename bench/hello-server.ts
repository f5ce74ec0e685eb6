/**
 * The runtime's own floor for cold start: a process that answers its first request with nothing
 * imported. Listens where DENO_SERVE_ADDRESS says, like the functions' index.ts files.
 */
Deno.serve(() => new Response("ok"));
