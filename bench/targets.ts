/** What the bench holds the service to; docs/performance.md says why these numbers. */

/** Highest median ratio of each route's p50 to its floor's, at concurrency 1 and at 8. */
export const ROUTE_TARGETS = {
  nonce: { at1: 1.5, loaded: 3 },
  "wallet-proof": { at1: 2, loaded: 3 },
  list: { at1: 1.5, loaded: 3 },
  put: { at1: 1.5, loaded: 3 },
  reveal: { at1: 1.5, loaded: 3 },
} as const;

/** Each function's first answer, at most this many times the bare runtime's hello. */
export const COLD_START_TARGET = 3;

/** The masked list's p50 with a long trail, at most this many times its p50 with none (issue 40). */
export const TRAIL_TARGET = 1.2;
