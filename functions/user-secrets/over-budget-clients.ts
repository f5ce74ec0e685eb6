/** A process's memory of the clients over their wrong reveal token budget (reveal-token.ts). */

/** How many client addresses a process remembers as over their budget (a few hundred KiB). */
const OVER_BUDGET_KEPT = 4096;

/** Wrong tokens a client sent while known to be over its budget, refused without a log line each. */
interface UnloggedRefusals {
  readonly client: string;
  readonly refusals: number;
}

/**
 * The client addresses this process has seen go over their wrong-token budget, each until its
 * window ends: their further wrong tokens are refused without asking the database, so a flood of
 * guesses costs the database one count per process and window. Another process learns the same
 * from the database on its first such request. Those refusals are only counted here, so a flood
 * is one log line per client and window, not one per guess: `ended()` hands over the counts of
 * windows that are over.
 */
export function createOverBudgetClients(now: () => number = Date.now) {
  // In the order added, so in the order their windows end (every window is the same length).
  const until = new Map<string, { end: number; refusals: number }>();
  const done: UnloggedRefusals[] = [];
  const close = (client: string, refusals: number) => {
    until.delete(client);
    if (refusals > 0) done.push({ client, refusals });
  };
  return {
    /**
     * Seconds until `client` may try again, counting this try as one of its unlogged refusals, or
     * null when it is not known to be over.
     */
    retryAfter(client: string): number | null {
      const entry = until.get(client);
      if (entry === undefined) return null;
      const left = Math.ceil((entry.end - now()) / 1000);
      if (left > 0) {
        entry.refusals++;
        return left;
      }
      close(client, entry.refusals);
      return null;
    },
    add(client: string, retryAfterSeconds: number): void {
      const known = until.get(client);
      if (known !== undefined) close(client, known.refusals);
      if (until.size >= OVER_BUDGET_KEPT) {
        const [oldest, entry] = until.entries().next().value!;
        close(oldest, entry.refusals);
      }
      until.set(client, { end: now() + retryAfterSeconds * 1000, refusals: 0 });
    },
    /** The unlogged refusals of every window that has ended (or was forgotten), once each. */
    ended(): UnloggedRefusals[] {
      for (const [client, entry] of until) {
        if (entry.end > now()) break;
        close(client, entry.refusals);
      }
      return done.splice(0);
    },
  };
}
