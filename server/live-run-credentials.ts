/**
 * Live-run credentials as an operator manages them (scripts/credentials.ts): add one per service,
 * list them, rotate one with a grace period, revoke one. Each is one statement against the
 * database the functions read, so nothing is redeployed; the reveal checks the presented
 * credential in its own statement, so a change holds from the next reveal. A new credential is
 * returned once, here, and only its hash is stored.
 */
import type { Database, Queryable } from "../functions/_shared/db/db.ts";
import { generateLiveRunCredential } from "../functions/_shared/auth/live-run-credential-format.ts";
import { liveRunCredentialHash } from "../functions/_shared/auth/live-run-credential-hash.ts";
import { isSecretType, type SecretType } from "../protocol/secret-types.ts";

/** A service's name as the trail shows it: lower-case letters, digits, `.`, `_`, `-`. */
export const CREDENTIAL_NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;

/** What an operator is told of a credential; never the credential itself. */
export interface CredentialInfo {
  readonly id: string;
  readonly name: string;
  readonly secretTypes: readonly SecretType[];
  readonly createdAt: Date;
  readonly expiresAt: Date | null;
  readonly revokedAt: Date | null;
  readonly rotatedFrom: string | null;
  /** `live`, `expired` or `revoked`, as of the database's clock. */
  readonly status: "live" | "expired" | "revoked";
}

/** A credential just made: the one time its text is known. */
export interface IssuedCredential {
  readonly credential: string;
  readonly info: CredentialInfo;
}

/** A refusal an operator can act on (a bad name, an unknown type, nothing to rotate). */
export class CredentialCommandError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CredentialCommandError";
  }
}

type InfoRow = {
  id: string;
  name: string;
  secret_types: string[];
  created_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
  rotated_from: string | null;
  status: CredentialInfo["status"];
};

/** The columns of InfoRow, of the table or CTE `from` is (`s.`) or of the only one (``). */
const infoColumns = (from = "") =>
  `${from}id::text as id, ${from}name, ${from}secret_types, ${from}created_at,
   ${from}expires_at, ${from}revoked_at, ${from}rotated_from::text as rotated_from,
   case when ${from}revoked_at is not null then 'revoked'
        when ${from}expires_at is not null and ${from}expires_at <= now() then 'expired'
        else 'live' end as status`;

// A live credential, as the reveal accepts one.
const LIVE = "revoked_at is null and (expires_at is null or expires_at > now())";

function info(row: InfoRow): CredentialInfo {
  return {
    id: row.id,
    name: row.name,
    secretTypes: row.secret_types as SecretType[],
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
    rotatedFrom: row.rotated_from,
    status: row.status,
  };
}

/**
 * One statement as service_role, as vault:rotate runs: the table forces row-level security and has
 * no policy, and on Supabase the `postgres` role an operator connects as is no superuser.
 */
function asService<T extends Record<string, unknown>>(
  db: Database,
  text: string,
  params: readonly unknown[] = [],
): Promise<T[]> {
  return db.transaction(async (tx: Queryable) => {
    await tx.query("set local role service_role");
    return await tx.query<T>(text, params);
  });
}

/** The name, checked: the trail shows it to creators. */
export function checkedName(name: string): string {
  if (!CREDENTIAL_NAME.test(name) || name === "legacy") {
    throw new CredentialCommandError(
      "a credential's name is 1 to 63 lower-case letters, digits, '.', '_' or '-' (as " +
        "image-worker), starting with a letter or digit; 'legacy' is SERVER_REVEAL_TOKEN's",
    );
  }
  return name;
}

/** The secret types, checked and in no particular order; at least one. */
export function checkedTypes(types: readonly string[]): SecretType[] {
  const unknown = types.filter((type) => !isSecretType(type));
  if (unknown.length > 0 || types.length === 0) {
    throw new CredentialCommandError(
      unknown.length > 0
        ? `unknown secret type(s): ${unknown.join(", ")}`
        : "name at least one secret type the service may reveal",
    );
  }
  return [...new Set(types)] as SecretType[];
}

/**
 * A new credential for the service `name`, able to reveal `secretTypes`, until `expiresAt` (never
 * when null). Refused while the name has a live credential: a service has one, rotated in place.
 */
export async function addCredential(
  db: Database,
  name: string,
  secretTypes: readonly string[],
  expiresAt: Date | null,
): Promise<IssuedCredential> {
  const credential = generateLiveRunCredential();
  const rows = await asService<InfoRow>(
    db,
    `insert into public.live_run_credentials (name, secret_types, token_hash, expires_at)
       select $1, $2::text[], $3, $4
        where not exists (select 1 from public.live_run_credentials
                           where name = $1 and ${LIVE})
     returning ${infoColumns()}`,
    [checkedName(name), checkedTypes(secretTypes), liveRunCredentialHash(credential), expiresAt],
  );
  if (rows.length === 0) {
    throw new CredentialCommandError(
      `${name} already has a live credential: rotate it (credentials:rotate), or revoke it first`,
    );
  }
  return { credential, info: info(rows[0]) };
}

/** Every credential, newest first per name; revoked and expired ones too. */
export async function listCredentials(db: Database): Promise<CredentialInfo[]> {
  const rows = await asService<InfoRow>(
    db,
    `select ${infoColumns()} from public.live_run_credentials order by name, created_at desc`,
  );
  return rows.map(info);
}

/** What a rotation made: the successor, and until when its predecessor still works. */
export interface Rotation extends IssuedCredential {
  readonly predecessorExpiresAt: Date;
}

/**
 * Issues the successor of `name`'s newest live credential, with its scope, and keeps the
 * predecessor valid for `graceSeconds` more (or until its own expiry, if sooner), so live-run
 * servers can move over with no refused reveal. The successor's expiry: `expiresAt` when given,
 * else as long a lifetime as the predecessor had (none if it had none).
 */
export async function rotateCredential(
  db: Database,
  name: string,
  graceSeconds: number,
  expiresAt: Date | null = null,
): Promise<Rotation> {
  if (!Number.isSafeInteger(graceSeconds) || graceSeconds < 0) {
    throw new CredentialCommandError("the grace period is a whole number of seconds, 0 or more");
  }
  const credential = generateLiveRunCredential();
  const rows = await asService<InfoRow & { predecessor_expires_at: Date }>(
    db,
    `with predecessor as (
       select id, name, secret_types, created_at, expires_at from public.live_run_credentials
        where name = $1 and ${LIVE}
        order by created_at desc limit 1
          for update
     ), retired as (
       update public.live_run_credentials c
          set expires_at = least(coalesce(c.expires_at, 'infinity'),
                                 now() + make_interval(secs => $3))
         from predecessor p where c.id = p.id
       returning c.expires_at
     ), successor as (
       insert into public.live_run_credentials
         (name, secret_types, token_hash, expires_at, rotated_from)
       select p.name, p.secret_types, $2, coalesce($4, now() + (p.expires_at - p.created_at)), p.id
         from predecessor p
       returning *
     )
     select ${infoColumns("s.")}, r.expires_at as predecessor_expires_at
       from successor s, retired r`,
    [checkedName(name), liveRunCredentialHash(credential), graceSeconds, expiresAt],
  );
  if (rows.length === 0) {
    throw new CredentialCommandError(`${name} has no live credential to rotate`);
  }
  return {
    credential,
    info: info(rows[0]),
    predecessorExpiresAt: rows[0].predecessor_expires_at,
  };
}

/**
 * Revokes every credential of `name` not yet revoked (a successor and a predecessor in its grace
 * alike): refused from the next reveal. The number revoked; 0 when there was none.
 */
export async function revokeCredential(db: Database, name: string): Promise<number> {
  const rows = await asService<{ id: string }>(
    db,
    `update public.live_run_credentials set revoked_at = now()
      where name = $1 and revoked_at is null returning id::text as id`,
    [checkedName(name)],
  );
  return rows.length;
}

/**
 * The local server's development credential, every type, named `development`: registered under
 * the credential's hash, once (server/main.ts calls it on each start).
 */
export async function ensureDevelopmentCredential(
  db: Database,
  credential: string,
  secretTypes: readonly SecretType[],
): Promise<void> {
  await asService(
    db,
    `insert into public.live_run_credentials (name, secret_types, token_hash)
       values ('development', $1::text[], $2)
     on conflict (token_hash) do nothing`,
    [secretTypes, liveRunCredentialHash(credential)],
  );
}
