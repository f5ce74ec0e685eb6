/**
 * The docs' walkthroughs as tests run them: a page's blocks marked ```lang package=<id>
 * [file=<path>] (docs_examples_test.ts leaves `package=` blocks to the tests that install the
 * package), and a page's install line run as written, with the packed tarball's path for the
 * package's name: the one substitution the pages' note at their top tells a reader to make.
 */
import assert from "node:assert/strict";
import { run } from "./packed-sdk.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** The package's name in the pages' install lines. */
export const PACKAGE_NAME = "@wallet-vault/client";

export interface PageBlock {
  readonly lang: string;
  readonly id: string;
  /** Where the block's text goes in the reader's project (`file=`), if it is a file. */
  readonly file: string | null;
  readonly line: number;
  readonly code: string;
}

/** Every ```lang package=<id> block of `page` (a path from the repository's root), in order. */
export async function pageBlocks(page: string): Promise<PageBlock[]> {
  const lines = (await Deno.readTextFile(`${ROOT}${page}`)).split("\n");
  const blocks: PageBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = lines[i].match(/^```(\w+)\s+(.*)$/);
    const words = open?.[2].trim().split(/\s+/) ?? [];
    const id = words.find((word) => word.startsWith("package="))?.slice("package=".length);
    if (open === null || id === undefined) continue;
    const end = lines.indexOf("```", i + 1);
    assert.ok(end > i, `${page}:${i + 1}: unclosed block`);
    const file = words.find((word) => word.startsWith("file="))?.slice("file=".length) ?? null;
    assert.ok(file === null || /^[\w.-]+(\/[\w.-]+)*$/.test(file) && !file.includes(".."));
    blocks.push({
      lang: open[1],
      id,
      file,
      line: i + 1,
      code: lines.slice(i + 1, end).join("\n") + "\n",
    });
    i = end;
  }
  return blocks;
}

/**
 * Runs a page's install line (one `npm install …` that names the package) in `dir` as written,
 * with `tarball` for the package's name. npm's cache first (CI fetches into it); nothing else
 * about the line changes.
 */
export async function installLine(block: PageBlock, dir: string, tarball: string): Promise<void> {
  const line = block.code.trim();
  const where = `package=${block.id} (line ${block.line})`;
  assert.match(line, /^npm install [\w@/.=^~<>\- ]+$/, `${where} is one npm install line`);
  const words = line.split(/\s+/);
  assert.ok(words.includes(PACKAGE_NAME), `${where} does not install ${PACKAGE_NAME}`);
  const [command, ...args] = words.map((word) => word === PACKAGE_NAME ? tarball : word);
  await run(command, args, dir, {
    npm_config_prefer_offline: "true",
    npm_config_audit: "false",
    npm_config_fund: "false",
  });
}

/**
 * The note at the top of a page that installs the package: how to install it before it is on
 * npm. Every such page says it the same way.
 */
export async function tarballNote(page: string): Promise<string | null> {
  const text = await Deno.readTextFile(`${ROOT}${page}`);
  return text.match(/^\*\*Before `@wallet-vault\/client` is on the npm registry\*\*[^]*?\n\n/m)
    ?.[0] ?? null;
}
