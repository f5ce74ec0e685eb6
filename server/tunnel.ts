/**
 * One connection accepted by serveWithLimits (connection-limits.ts), piped byte for byte to its
 * twin on the internal server, with the head deadline armed whenever no request is in progress.
 */

/** After a 408 the client gets this long to take the answer before its socket is closed. */
export const LINGER_MS = 1_000;
const BUFFER_BYTES = 16 * 1024;

/** One accepted connection and its twin on the internal server. */
export class Tunnel {
  readonly remoteAddr: Deno.NetAddr;
  innerKey: string | null = null;
  #inner: Deno.TcpConn | null = null;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #active = 0;
  #closeWhenIdle = false;
  #draining = false;
  #closed = false;
  #pumps = 0;

  constructor(
    readonly client: Deno.TcpConn,
    readonly headerTimeoutMs: number,
    readonly onClosed: (tunnel: Tunnel) => void,
  ) {
    this.remoteAddr = client.remoteAddr;
    this.#arm();
  }

  async connect(innerPort: number, register: (key: string) => void): Promise<void> {
    try {
      this.#inner = await Deno.connect({ hostname: "127.0.0.1", port: innerPort });
    } catch {
      this.destroy();
      return;
    }
    if (this.#closed) {
      this.#inner.close();
      return;
    }
    // Registered before a byte is forwarded, so the handler always finds it.
    this.innerKey = addrKey(this.#inner.localAddr);
    register(this.innerKey);
    this.#pumps = 2;
    this.#clientToInner(this.#inner);
    this.#innerToClient(this.#inner);
  }

  /** The internal server has a complete head: no head deadline while a request is handled. */
  requestStarted(): void {
    this.#active++;
    clearTimeout(this.#timer);
  }

  /** Its response was delivered (or could not be). */
  requestFinished(): void {
    this.#active--;
    if (this.#active > 0 || this.#closed) return;
    if (this.#closeWhenIdle) this.#drain(true);
    else this.#arm();
  }

  /** After the response in progress, end the connection (its request stream is unusable). */
  closeAfterResponse(): void {
    this.#closeWhenIdle = true;
  }

  /** The server is stopping: end the connection now if idle, else once its response is out. */
  endWhenIdle(): void {
    this.#closeWhenIdle = true;
    if (this.#active === 0 && !this.#closed) this.#drain(true);
  }

  destroy(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#timer);
    for (const conn of [this.client, this.#inner]) {
      try {
        conn?.close();
      } catch {
        // already closed
      }
    }
    this.onClosed(this);
  }

  #arm(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.destroy(), this.headerTimeoutMs);
  }

  /**
   * Ends the request stream but lets the answer already written reach the client: the internal
   * server sees end-of-input and closes, the rest of its bytes are forwarded, and whatever the
   * client still sends is read and dropped (closing with unread input would reset the connection
   * and could discard the answer). The socket is closed after LINGER_MS at the latest.
   */
  #drain(endInput: boolean): void {
    this.#draining = true;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.destroy(), LINGER_MS);
    if (!endInput) return;
    try {
      this.#inner?.closeWrite();
    } catch {
      // The internal side is already gone; its bytes still drain to the client.
    }
  }

  async #clientToInner(inner: Deno.TcpConn): Promise<void> {
    const buffer = new Uint8Array(BUFFER_BYTES);
    try {
      for (;;) {
        const n = await this.client.read(buffer);
        if (n === null) break;
        if (!this.#draining) await writeAll(inner, buffer.subarray(0, n));
      }
      // The client has finished sending: pass that on, and the internal server ends the exchange.
      if (!this.#draining) await inner.closeWrite();
    } catch {
      this.destroy();
    }
    this.#pumpDone();
  }

  async #innerToClient(inner: Deno.TcpConn): Promise<void> {
    const buffer = new Uint8Array(BUFFER_BYTES);
    try {
      for (;;) {
        const n = await inner.read(buffer);
        if (n === null) break;
        await writeAll(this.client, buffer.subarray(0, n));
      }
      await this.client.closeWrite();
      // The internal server is done with this connection; a client that neither sends nor closes
      // gets no more than the linger time.
      if (!this.#draining) this.#drain(false);
    } catch {
      this.destroy();
    }
    this.#pumpDone();
  }

  #pumpDone(): void {
    if (--this.#pumps === 0) this.destroy();
  }
}

export function addrKey(addr: Deno.Addr): string {
  const { hostname, port } = addr as Deno.NetAddr;
  return `${hostname}:${port}`;
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < bytes.length) offset += await conn.write(bytes.subarray(offset));
}
