import { serveWithLimits } from "../server/connection-limits.ts";
import { atEdge } from "../server/app.ts";
import { runLoad } from "../bench/http-load.ts";
const mode = Deno.args[0];
const h = async (req: Request) => {
  if (req.body) await req.arrayBuffer();
  return new Response('{"ok":true}', { headers: { "content-type": "application/json" } });
};
const handler = mode.includes("edge")
  ? atEdge(h, { header: "x-forwarded-for", trustedHops: 1 } as never)
  : h;
let url: string;
if (mode.startsWith("guard")) {
  const s = serveWithLimits({ hostname: "127.0.0.1", port: 0 }, handler);
  url = `http://127.0.0.1:${s.addr.port}/`;
} else {
  const s = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handler);
  url = `http://127.0.0.1:${s.addr.port}/`;
}
for (const method of ["GET", "POST"]) {
  const r = await runLoad({
    concurrency: 1,
    durationMs: 2000,
    warmupMs: 300,
    request: () =>
      new Request(url, {
        method,
        body: method === "POST" ? '{"a":1}' : null,
        headers: {
          "content-type": "application/json",
          authorization:
            "Bearer xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        },
      }),
  });
  console.log(mode, method, "p50", r.p50Ms.toFixed(3), "ms");
}
Deno.exit(0);
