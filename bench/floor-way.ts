/**
 * How a floor server (bench/bare-server.ts) is reached, which must be the way its route is: the
 * local server answers through its connection guard (issue 13 item 8: head and body deadlines and
 * a connection cap, server/connection-limits.ts), so the local engines' floors go through the same
 * guard; a deployed function is reached directly, and so is its floor (through the same pooler).
 */
export type FloorWay = "guarded" | "direct";

/** BENCH_FLOOR_WAY as bare-server.ts reads it: unset means direct; anything else unknown stops it. */
export function floorWay(raw: string | undefined): FloorWay {
  if (raw === undefined || raw === "" || raw === "direct") return "direct";
  if (raw === "guarded") return "guarded";
  throw new RangeError(
    `BENCH_FLOOR_WAY must be "guarded" or "direct", not ${JSON.stringify(raw)}.`,
  );
}

/** What a floor's label adds to say how it is reached: nothing for a floor reached directly… */
export function wayLabel(way: FloorWay): string {
  return way === "guarded" ? ", behind the connection guard" : "";
}

/** …unless it is measured beside a guarded one, to tell the two apart. */
export function besideLabel(way: FloorWay): string {
  return way === "guarded" ? wayLabel(way) : ", without the connection guard";
}

/** The id suffix of a route's row against its floor reached the other way (`postgres/list-vs-direct-floor`). */
export function besideRowSuffix(way: FloorWay): string {
  return `-vs-${way}-floor`;
}

/** Why the local engines' floors changed, printed above the ratios to the old and the new floor. */
export const GUARDED_FLOOR_CHANGE =
  "The local engines' floors changed on 2026-11-25: each now answers through the local server's connection guard, as its route does. Every local server must have the guard (issue 13 item 8: head and body deadlines, a connection cap), and a floor is the least a server meeting the same requirements can do, as the deployed floor goes through the same pooler as the functions. Before, the floor was a bare Deno.serve without it, and the guard's loopback hop counted as the service's overhead. Both floors are measured in every run, after each route, in halves placed A B … B A so that neither is always the nearest to the route; the route's ratio to each:";
