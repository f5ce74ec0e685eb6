/**
 * The bytes of git blobs, streamed from one `git cat-file --batch`.
 */
import { ByteReader } from "./byte-reader.ts";
import type { BlobRef } from "./git.ts";

export interface Blob {
  readonly ref: BlobRef;
  readonly size: number;
  /** The content in pieces; read it (or stop early) before asking for the next blob. */
  readonly chunks: AsyncIterable<Uint8Array>;
}

const CHUNK_BYTES = 1 << 20;

/** The blobs' contents, in the order given, from one `git cat-file --batch`. */
export async function* readBlobs(root: string, refs: readonly BlobRef[]): AsyncGenerator<Blob> {
  if (refs.length === 0) return;
  const child = new Deno.Command("git", {
    args: ["cat-file", "--batch"],
    cwd: root,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  // Written while the answers are read: git stops reading once its output is not taken.
  const writing = (async () => {
    const writer = child.stdin.getWriter();
    try {
      for (let i = 0; i < refs.length; i += 1000) {
        const batch = refs.slice(i, i + 1000).map((ref) => `${ref.sha}\n`).join("");
        await writer.write(new TextEncoder().encode(batch));
      }
      await writer.close();
    } catch {
      // git went away; its exit status says why
    }
  })();
  const reader = new ByteReader(child.stdout.getReader());
  let finished = false;
  let status: Deno.CommandStatus;
  try {
    for (const ref of refs) {
      const header = await reader.line();
      if (header === null) throw new Error("git cat-file ended early");
      // "<sha> blob <size>" or "<sha> missing"
      const [, type, sizeText] = header.split(" ");
      if (type !== "blob") throw new Error(`git cat-file: ${ref.sha} is ${type ?? "unreadable"}`);
      const state = { remaining: Number(sizeText) };
      yield { ref, size: Number(sizeText), chunks: blobChunks(reader, state) };
      // Whatever the consumer did not read, then the newline after the content.
      while (state.remaining > 0) {
        const skipped = await reader.take(Math.min(state.remaining, CHUNK_BYTES));
        if (skipped === null) throw new Error("git cat-file ended early");
        state.remaining -= skipped.length;
      }
      await reader.line();
    }
    finished = true;
  } finally {
    if (!finished) {
      try {
        child.kill();
      } catch {
        // already gone
      }
    }
    await reader.cancel();
    await writing;
    status = await child.status;
  }
  if (!status.success) throw new Error(`git cat-file failed: ${(await stderr).trim()}`);
}

async function* blobChunks(
  reader: ByteReader,
  state: { remaining: number },
): AsyncGenerator<Uint8Array> {
  while (state.remaining > 0) {
    const chunk = await reader.take(Math.min(state.remaining, CHUNK_BYTES));
    if (chunk === null) throw new Error("git cat-file ended early");
    state.remaining -= chunk.length;
    yield chunk;
  }
}
