/**
 * The floors the bench knows: what each asks of the bare server (bench/bare-server.ts), which one
 * each route is set against (and beside), and what makes a floor's answer count.
 */
import { SECRET_TYPES } from "../functions/_shared/vault/secret-types.ts";

/** What each floor does against the bare server (bench/bare-server.ts). */
export const FLOORS = {
  read: {
    label: "bare read (the creator's rows)",
    request: (url: string, user: string) => new Request(`${url}/?user=${user}`),
  },
  "ciphertext read": {
    label: "bare read (the creator's ciphertexts)",
    request: (url: string, user: string) =>
      new Request(`${url}/reveal?user=${user}`, { method: "POST" }),
  },
  // An audited reveal must commit a write: the same read plus one insert, in one round trip (one
  // statement, so on every engine: bench/floor-queries.ts).
  "audited read": {
    label: "bare read (the creator's ciphertexts) + one committed insert",
    request: (url: string, user: string) =>
      new Request(`${url}/reveal-audited?user=${user}`, { method: "POST" }),
  },
  // Reveal's floor until 2026-11-25, kept beside the new one (bench/floor-changes.ts).
  "audited read in two statements": {
    label: "bare read (the creator's ciphertexts) + one committed insert, as two statements",
    request: (url: string, user: string) =>
      new Request(`${url}/reveal-audited?user=${user}&statements=2`, { method: "POST" }),
  },
  write: {
    label: "bare write (one upsert)",
    request: (url: string, user: string, i: number) =>
      new Request(`${url}/?user=${user}&type=${SECRET_TYPES[i % SECRET_TYPES.length]}`, {
        method: "PUT",
      }),
  },
  // The nonce commits without waiting for the WAL flush (functions/wallet-proof/nonce.ts), so its
  // floor's upsert does too; until 2026-11-25 it was `write`, which waits (bench/floor-changes.ts).
  "write without flush wait": {
    label: "bare write (one upsert) committed without waiting for the WAL flush",
    request: (url: string, user: string, i: number) =>
      new Request(
        `${url}/?user=${user}&type=${SECRET_TYPES[i % SECRET_TYPES.length]}&synchronous_commit=off`,
        { method: "PUT" },
      ),
  },
} as const;
export type Floor = keyof typeof FLOORS;

/** The floor each route is compared with (wallet-proof's also adds one in-process recovery). */
export const FLOOR_OF: Record<string, Floor> = {
  nonce: "write without flush wait",
  "wallet-proof": "write",
  list: "read",
  put: "write",
  reveal: "audited read",
};
/**
 * Other floors a route is also reported against, each with what its row says: reveal beside the
 * plain read, and every route whose floor changed beside its old one (bench/floor-changes.ts).
 */
export const ALSO_AGAINST: Partial<Record<string, readonly { floor: Floor; against: string }[]>> = {
  reveal: [
    { floor: "ciphertext read", against: "the plain read" },
    { floor: "audited read in two statements", against: "its floor until 2026-11-25" },
  ],
  nonce: [{ floor: "write", against: "its floor until 2026-11-25" }],
};
/** The route next to which each floor's own row is measured. */
export const FLOOR_ROW_FROM: Record<Floor, string> = {
  read: "list",
  "ciphertext read": "reveal",
  "audited read": "reveal",
  "audited read in two statements": "reveal",
  write: "put",
  "write without flush wait": "nonce",
};

/** The floors whose answer is a write's; the others answer with the creator's seven rows. */
const WRITES: readonly Floor[] = ["write", "write without flush wait"];

/** What makes a floor's answer count: a read returned all seven rows; a write answered 2xx. */
export function floorOk(floor: Floor): (response: Response, body: string) => boolean {
  return WRITES.includes(floor)
    ? (response) => response.status >= 200 && response.status < 300
    : (response, body) => response.status === 200 && JSON.parse(body).secrets.length === 7;
}
