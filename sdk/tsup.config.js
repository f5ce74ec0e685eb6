// The package build (`deno task sdk:build`): ESM and CommonJS with declarations, one set of files
// per subpath, from src/. The protocol's shared facts (../protocol: secret types, provider routing,
// error codes, the reveal header) are bundled in; every bare import stays external, so whatever a
// wallet adapter imports is the app's own copy (an optional peer), never bundled. Everything the
// build writes is under dist/.
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";

const ENTRIES = ["index", "browser", "server", "rainbowkit", "appkit-siwx"];

// A fresh dist/ each time: tsup's own clean keeps old declaration files, which npm would pack.
rmSync("dist", { recursive: true, force: true });
// The package ships the repository's license, from dist/ like the rest of what it ships.
mkdirSync("dist");
copyFileSync("../LICENSE", "dist/LICENSE");

/** @type {import("tsup").Options} */
const common = {
  tsconfig: "tsconfig.build.json",
  platform: "neutral",
  target: "es2022",
  outDir: "dist",
  external: [/^[^./]/],
};

const entry = (name) => `src/${name}.ts`;

/** @type {import("tsup").Options[]} */
export default [
  {
    ...common,
    entry: Object.fromEntries(ENTRIES.map((name) => [name, entry(name)])),
    format: ["esm", "cjs"],
    // One copy of each class across subpaths in both formats, so `instanceof VaultError` holds
    // for an error thrown by /server and a VaultError imported from the root.
    splitting: true,
    onSuccess() {
      // Deno finds an ES module's declarations through this directive when it loads dist/*.js as
      // a file or URL (a vendored copy, a CDN) rather than through package.json's `types`.
      for (const name of ENTRIES) {
        const file = `dist/${name}.js`;
        writeFileSync(file, `/* @ts-self-types="./${name}.d.ts" */\n${readFileSync(file, "utf8")}`);
      }
    },
  },
  // Declarations one entry at a time, so each .d.ts stands alone: shared declaration chunks are
  // imported as `./chunk.js`, which TypeScript maps to its .d.ts but Deno, following the directive
  // above, does not.
  ...ENTRIES.map((name) => ({
    ...common,
    entry: { [name]: entry(name) },
    format: ["esm", "cjs"],
    dts: { only: true },
  })),
];
