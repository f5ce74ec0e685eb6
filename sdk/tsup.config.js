// The package build (`deno task sdk:build`): ESM and CommonJS with declarations, one set of files
// per subpath. Shared code (functions/_shared) is bundled in; every bare import stays external, so
// whatever a wallet adapter imports is the app's own copy (an optional peer), never bundled.
import { copyFileSync, readFileSync, rmSync, writeFileSync } from "node:fs";

const ENTRIES = ["index", "browser", "server", "rainbowkit", "appkit-siwx"];

// A fresh dist/ each time: tsup's own clean keeps old declaration files, which npm would pack.
rmSync("dist", { recursive: true, force: true });
// The package ships the repository's license (npm takes LICENSE from the package root).
copyFileSync("../LICENSE", "LICENSE");

/** @type {import("tsup").Options} */
const common = {
  tsconfig: "tsconfig.build.json",
  platform: "neutral",
  target: "es2022",
  outDir: "dist",
  external: [/^[^./]/],
};

/** @type {import("tsup").Options[]} */
export default [
  {
    ...common,
    entry: Object.fromEntries(ENTRIES.map((name) => [name, `${name}.ts`])),
    format: ["esm", "cjs"],
    // One copy of each class across subpaths in both formats, so `instanceof VaultError` holds
    // for an error thrown by /server and a VaultError imported from the root.
    splitting: true,
    onSuccess() {
      // Deno and JSR find an ES module's declarations through this directive (jsr.json).
      for (const name of ENTRIES) {
        const file = `dist/${name}.js`;
        writeFileSync(file, `/* @ts-self-types="./${name}.d.ts" */\n${readFileSync(file, "utf8")}`);
      }
    },
  },
  // Declarations one entry at a time, so each .d.ts stands alone: shared declaration chunks are
  // imported as `./chunk.js`, which TypeScript maps to its .d.ts but Deno and JSR do not.
  ...ENTRIES.map((name) => ({
    ...common,
    entry: { [name]: `${name}.ts` },
    format: ["esm", "cjs"],
    dts: { only: true },
  })),
];
