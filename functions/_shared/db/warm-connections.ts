/**
 * Reserved connections handed out warmest first. postgres.js hands out its idle connections in
 * turn (first in, first out), so once a burst has opened the whole pool, every request after it
 * goes to a different connection: one at a time, each server process it reaches has been idle the
 * longest (and slower for it), and no connection ever idles long enough to be closed.
 *
 * A released connection is kept here, still reserved, for a moment, and the next request takes the
 * one released last. One kept longer than PARKED_MS goes back to the driver, whose idle timeout
 * then closes it; so does every one the moment a request is waiting in the driver's own queue.
 */
import type postgres from "postgres";

/** How long a released connection is kept for the next request before it goes back. */
export const PARKED_MS = 1000;

export interface WarmConnections {
  /** The connection released last, else one from `pool`. */
  reserve(pool: postgres.Sql): Promise<postgres.ReservedSql>;
  /**
   * Keeps `reserved` (from `pool`) for the next request, or gives it back to the driver. `alive`
   * says whether the driver still has it reserved: one the server closed meanwhile was taken back
   * by the driver, and is dropped, never handed out nor released again. Without it, nothing is
   * kept.
   */
  release(pool: postgres.Sql, reserved: postgres.ReservedSql, alive?: () => boolean): void;
  /** Gives every kept connection back to the driver (before `pool` is replaced or ended). */
  releaseAll(): void;
}

interface Parked {
  readonly pool: postgres.Sql;
  readonly reserved: postgres.ReservedSql;
  readonly alive: () => boolean;
  readonly since: number;
}

/** Gives `entry` back to the driver, unless the driver already took it back (closed). */
const giveBack = (entry: Parked) => {
  if (entry.alive()) entry.reserved.release();
};

export interface WarmOptions {
  readonly parkedMs?: number;
  readonly now?: () => number;
}

export function createWarmConnections(options: WarmOptions = {}): WarmConnections {
  const parkedMs = options.parkedMs ?? PARKED_MS;
  const now = options.now ?? (() => performance.now());
  // Last released on top.
  let parked: Parked[] = [];
  // Requests waiting in the driver's queue: a connection released now must go to them.
  let waitingInDriver = 0;
  let sweep: ReturnType<typeof setTimeout> | undefined;

  const giveBackStale = () => {
    sweep = undefined;
    const cutoff = now() - parkedMs;
    const stale = parked.filter((entry) => entry.since <= cutoff);
    parked = parked.filter((entry) => entry.since > cutoff);
    stale.forEach(giveBack);
    scheduleSweep();
  };
  const scheduleSweep = () => {
    if (sweep !== undefined || parked.length === 0) return;
    sweep = setTimeout(giveBackStale, parkedMs);
    // A kept connection must not keep a process alive that has nothing else to do.
    Deno.unrefTimer?.(sweep as unknown as number);
  };

  return {
    async reserve(pool) {
      // The last released of the current pool (a replaced pool's went back with releaseAll); one
      // the driver took back meanwhile is dropped on the way.
      for (let i = parked.length - 1; i >= 0; i--) {
        const entry = parked[i];
        const live = entry.alive();
        if (live && entry.pool !== pool) continue;
        parked.splice(i, 1);
        if (live) return entry.reserved;
      }
      waitingInDriver++;
      try {
        return await pool.reserve();
      } finally {
        waitingInDriver--;
      }
    },
    release(pool, reserved, alive) {
      if (alive === undefined || waitingInDriver > 0) return reserved.release();
      parked.push({ pool, reserved, alive, since: now() });
      scheduleSweep();
    },
    releaseAll() {
      clearTimeout(sweep);
      sweep = undefined;
      const all = parked;
      parked = [];
      all.forEach(giveBack);
    },
  };
}
