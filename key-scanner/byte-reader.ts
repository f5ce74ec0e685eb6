const decoder = new TextDecoder();

/** Lines and counted bytes from a byte stream. */
export class ByteReader {
  #buffer = new Uint8Array(0);
  #offset = 0;
  #ended = false;

  constructor(readonly reader: ReadableStreamDefaultReader<Uint8Array>) {}

  async #more(): Promise<boolean> {
    if (this.#ended) return false;
    const { done, value } = await this.reader.read();
    if (done) {
      this.#ended = true;
      return false;
    }
    const rest = this.#buffer.subarray(this.#offset);
    const merged = new Uint8Array(rest.length + value.length);
    merged.set(rest);
    merged.set(value, rest.length);
    this.#buffer = merged;
    this.#offset = 0;
    return true;
  }

  /** The next line without its newline; null at the end of the stream. */
  async line(): Promise<string | null> {
    for (;;) {
      const newline = this.#buffer.indexOf(10, this.#offset);
      if (newline >= 0) {
        const line = decoder.decode(this.#buffer.subarray(this.#offset, newline));
        this.#offset = newline + 1;
        return line;
      }
      if (!(await this.#more())) return null;
    }
  }

  /** Between 1 and `max` bytes, as they arrive; null at the end of the stream. */
  async take(max: number): Promise<Uint8Array | null> {
    if (this.#offset >= this.#buffer.length && !(await this.#more())) return null;
    const end = Math.min(this.#buffer.length, this.#offset + max);
    const bytes = this.#buffer.slice(this.#offset, end);
    this.#offset = end;
    return bytes;
  }

  async cancel(): Promise<void> {
    await this.reader.cancel().catch(() => {});
  }
}
