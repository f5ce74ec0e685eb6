/** The bare runtime's first answer, for cold start: nothing imported, on FUNCTION_PORT. */
const port = Number(Deno.env.get("FUNCTION_PORT"));
Deno.serve({ hostname: "127.0.0.1", port, onListen() {} }, () => new Response("ok"));
