/**
 * The scanner's allow-list, `.scan-keys-allow` at the project's root: what is known not to be a
 * credential (a generated module, a test vector, a fixture), by git blob id (every finding in that
 * content, at any path and in any commit) or by a finding's fingerprint (that value wherever it
 * is). History cannot be edited, so a line-level marker cannot cover what is already committed;
 * these entries can, and they keep covering it after the file changes again.
 *
 *     # each entry: a kind, an id, and after #, why
 *     blob 3f5e1c…(40 hex digits)        # functions/…/secp256k1-wasm.ts, generated
 *     fingerprint 9a0c2e71d4b85f36       # the documented test vector in docs/api.md
 */

export const ALLOW_FILE = ".scan-keys-allow";

/** Marks a line whose match is known not to be a credential (use sparingly, and say why). */
export const ALLOW_MARKER = "scan-keys:allow";

export interface AllowList {
  readonly blobs: ReadonlySet<string>;
  readonly fingerprints: ReadonlySet<string>;
}

export const EMPTY_ALLOW_LIST: AllowList = { blobs: new Set(), fingerprints: new Set() };

/** Parses the allow-list; throws naming `name:line` for a line that is not an entry. */
function parseAllowList(text: string, name = ALLOW_FILE): AllowList {
  const blobs = new Set<string>();
  const fingerprints = new Set<string>();
  text.split("\n").forEach((raw, index) => {
    const line = raw.replace(/#.*$/, "").trim();
    if (line === "") return;
    const entry = /^(blob|fingerprint)\s+([0-9a-f]+)$/i.exec(line);
    const id = entry?.[2].toLowerCase();
    if (
      entry !== null && entry[1].toLowerCase() === "blob" &&
      /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/.test(id!)
    ) {
      blobs.add(id!);
    } else if (
      entry !== null && entry[1].toLowerCase() === "fingerprint" && /^[0-9a-f]{16}$/.test(id!)
    ) {
      fingerprints.add(id!);
    } else {
      throw new Error(
        `${name}:${index + 1}: not an entry: expected "blob <40 hex digits>" or ` +
          `"fingerprint <16 hex digits>", then an optional # comment`,
      );
    }
  });
  return { blobs, fingerprints };
}

/** The allow-list in `root`, or an empty one when there is none. */
export async function loadAllowList(root: string): Promise<AllowList> {
  let text: string;
  try {
    text = await Deno.readTextFile(`${root}/${ALLOW_FILE}`);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return EMPTY_ALLOW_LIST;
    throw error;
  }
  return parseAllowList(text);
}
