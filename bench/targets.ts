/**
 * What the bench holds the service to (issue 15), read by the report (bench/render.ts): each
 * route's median ratio to its floor, at concurrency 1 and at the bench's concurrency, on every
 * engine marked `targeted` in bench/engines.ts (PGlite is reported, not targeted).
 *
 * `cause` is the measured explanation of a miss, written by whoever profiled it; the report prints
 * it only beside a target the latest run missed, and says so when a miss has none.
 */
export interface Target {
  /** The route's key in bench/routes.ts (`nonce`, `wallet-proof`, `list`, `put`, `reveal`). */
  readonly route: string;
  readonly label: string;
  /** Highest acceptable median ratio to the floor at concurrency 1, and at the bench's concurrency. */
  readonly at1: number;
  readonly loaded: number;
  readonly cause?: { readonly at1?: string; readonly loaded?: string };
}

// Causes are written after a run, from what that run and deno task bench:profile measured; a
// target the latest run missed without one is reported as such.
export const TARGETS: readonly Target[] = [
  { route: "wallet-proof", label: "POST /api/auth/wallet-proof", at1: 2, loaded: 3 },
  { route: "list", label: "GET /api/secrets", at1: 1.5, loaded: 3 },
  { route: "put", label: "PUT /api/secrets", at1: 1.5, loaded: 3 },
  { route: "nonce", label: "POST /api/auth/nonce", at1: 1.5, loaded: 3 },
  // Against its audited floor: the ciphertexts read and one insert committed in one round trip.
  { route: "reveal", label: "POST /api/secrets/reveal", at1: 1.5, loaded: 3 },
];
