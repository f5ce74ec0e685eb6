/**
 * Floors changed since the connection guard's change (bench/floor-way.ts), each with its reason.
 * Issue 15: a floor changes only with the reason written down and the old and new floor shown side
 * by side; so each route whose floor changed is measured against its old floor too, in every run
 * (bench/floors.ts, ALSO_AGAINST), and the report sets the two ratios side by side under the reason
 * (bench/render.ts). Nothing is imported here: bench:report reads it with its narrow permissions.
 */

export interface FloorChange {
  /** The route, as bench/routes.ts names it. */
  readonly route: string;
  /** Its floor before the change (a key of FLOORS in bench/floors.ts), still measured. */
  readonly before: string;
}

export const FLOOR_CHANGES: readonly FloorChange[] = [
  { route: "reveal", before: "audited read in two statements" },
  { route: "nonce", before: "write" },
];

/** Why they changed, printed above the ratios to the old and the new floor. */
export const FLOOR_CHANGES_REASON =
  "Reveal's and the nonce's floors changed on 2026-11-25. Reveal's audited floor sent the read and the audit insert as two statements of one transaction; behind the pooler nothing is prepared, so each waited for its own Parse/Describe: about 5.2 round trips, against 3.2 for the route's one call, where issue 15 asks for the read and one insert in the same round trip. It is now one statement (the insert in a WITH), one round trip on every engine. The nonce commits without waiting for the WAL flush (functions/wallet-proof/nonce.ts), but its floor was the upsert PUT is held to, which waits for it, so the nonce measured faster than its own floor (0.74× in the run of 5d0fc3b); its floor is now that upsert committed the same way as the nonce. Both old floors are measured in every run beside the new ones; the route's ratio to each:";

/** The id suffix of a route's row against another of its floors (`reveal-vs-ciphertext-read`). */
export function alsoRowSuffix(floor: string): string {
  return `-vs-${floor.replaceAll(" ", "-")}`;
}
