/**
 * `deno task openapi`: regenerates docs/openapi.json from the routes' zod schemas and the error
 * table. `--check` writes nothing and fails when the committed file is out of date.
 */
import { OPENAPI_FILE, openApiText } from "./lib/openapi-file.ts";

const text = openApiText();
const path = OPENAPI_FILE.pathname;
if (Deno.args.includes("--check")) {
  const committed = await Deno.readTextFile(OPENAPI_FILE).catch(() => null);
  if (committed !== text) {
    console.error(`${path} is out of date: run deno task openapi`);
    Deno.exit(1);
  }
  console.log(`${path} is up to date`);
} else {
  await Deno.writeTextFile(OPENAPI_FILE, text);
  console.log(`wrote ${path}`);
}
