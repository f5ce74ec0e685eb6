/**
 * Single-connection driver instances handed out warmest first: the one released last goes to the
 * next use (last in, first out). postgres.js hands out a pool's idle connections in turn (first
 * in, first out), so once a burst has opened the whole pool, every request after it would go to a
 * different connection: one at a time, each server process it reaches has been idle the longest
 * (and is slower for it), and no connection ever idles long enough to be closed. Handed out from
 * the top of a stack, the few instances in use stay hot, and the ones below idle until the driver's
 * idle timeout closes their connections.
 *
 * An instance is held by one use at a time. The first is opened at once, so that settings `open`
 * refuses fail when the stack is made rather than in a use; others only when none is free, up to
 * `max`. Past that, uses wait in line (first come, first served) for the next one released.
 */

export interface ConnectionStack<T> {
  /**
   * The instance released last, else a new one while fewer than `max` exist, else the next one
   * released.
   */
  acquire(): Promise<T>;
  /** Gives `instance` back for the next use. One replaced meanwhile is ignored: it is ending. */
  release(instance: T): void;
  /** Ends `instance`, whose use is over, and frees its place for a fresh one. */
  replace(instance: T): void;
  /** Replaces every instance, idle or in use (a use under way may finish first). */
  replaceAll(): void;
  /** Ends every instance and waits for those being replaced; uses still waiting are refused. */
  close(): Promise<void>;
}

export interface StackOptions<T> {
  /** How many instances may exist at once. */
  readonly max: number;
  /** Makes a new instance. */
  readonly open: () => T;
  /**
   * Ends an instance, as it was when taken out: `busy`, a use still runs on it, which it may let
   * finish first; `replaced`, its use failed (replace); `idle`. A failure to end it cleanly is
   * ignored: it is gone either way.
   */
  readonly end: (instance: T, state: EndingState) => Promise<void>;
}

export type EndingState = "busy" | "replaced" | "idle";

/** Refuses a use after close, with the code postgres.js gives a query on an ended pool. */
class StackClosedError extends Error {
  readonly code = "CONNECTION_ENDED";
  constructor() {
    super("The database connections are closed.");
    this.name = "StackClosedError";
  }
}

interface Waiter<T> {
  readonly resolve: (instance: T) => void;
  readonly reject: (error: Error) => void;
}

export function createConnectionStack<T>(options: StackOptions<T>): ConnectionStack<T> {
  const { max, open, end } = options;
  /** Released last on top. */
  const idle: T[] = [open()];
  const busy = new Set<T>();
  const waiters: Waiter<T>[] = [];
  const retiring = new Set<Promise<void>>();
  let closed = false;

  const retire = (instance: T, state: EndingState) => {
    const ending = end(instance, state).catch(() => {});
    retiring.add(ending);
    ending.finally(() => retiring.delete(ending));
  };
  const retireAll = () => {
    for (const instance of idle.splice(0)) retire(instance, "idle");
    for (const instance of busy) retire(instance, "busy");
    busy.clear();
  };
  const handOut = (instance: T) => {
    busy.add(instance);
    return instance;
  };
  /** Fresh instances for the uses waiting, while places are free. */
  const serveWaiters = () => {
    while (waiters.length > 0 && busy.size + idle.length < max) {
      waiters.shift()!.resolve(handOut(open()));
    }
  };

  return {
    acquire() {
      if (closed) return Promise.reject(new StackClosedError());
      const warmest = idle.pop();
      if (warmest !== undefined) return Promise.resolve(handOut(warmest));
      if (busy.size < max) return Promise.resolve(handOut(open()));
      return new Promise((resolve, reject) => waiters.push({ resolve, reject }));
    },
    release(instance) {
      if (!busy.delete(instance)) return;
      const next = waiters.shift();
      if (next) next.resolve(handOut(instance));
      else idle.push(instance);
    },
    replace(instance) {
      if (!busy.delete(instance)) return;
      retire(instance, "replaced");
      serveWaiters();
    },
    replaceAll() {
      if (closed) return;
      retireAll();
      serveWaiters();
    },
    async close() {
      closed = true;
      for (const waiter of waiters.splice(0)) waiter.reject(new StackClosedError());
      retireAll();
      await Promise.all(retiring);
    },
  };
}
