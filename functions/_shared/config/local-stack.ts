/**
 * Development and test skip every production check (weak secrets, https origins, required
 * settings), so they run only against a local stack: a function or server whose Supabase project
 * or database is anywhere else is refused, whatever APP_ENV says. On Supabase's platform a
 * function always has SUPABASE_URL=https://<ref>.supabase.co, so APP_ENV=development left in a
 * deployed project's secrets stops it instead of opening it.
 */

import { isLoopbackHostname } from "../../../protocol/loopback.ts";

/** The settings that say where the project and its data are; each is checked when given. */
const LOCATED_BY = ["SUPABASE_URL", "DATABASE_URL", "SUPABASE_DB_URL"] as const;

/**
 * Hosts a local stack has: loopback (protocol/loopback.ts), a name without a dot (a container
 * beside this one: `supabase functions serve` gives `http://kong:8000` and a database at `db`),
 * Docker's name for the host machine, and no host at all (a Unix socket).
 */
function isLocalHost(hostname: string): boolean {
  // A postgres:// URL's host is not lower-cased by the URL parser, and a trailing dot is allowed.
  const host = hostname.toLowerCase().replace(/\.$/, "");
  if (host === "" || host === "host.docker.internal" || isLoopbackHostname(host)) return true;
  // A dotless name; an IP literal always has a dot or a colon (WHATWG URL reads a bare number as
  // IPv4 and writes it dotted, so `2130706433` is 127.0.0.1 above and `0` is 0.0.0.0, refused).
  return !host.includes(".") && !host.includes(":");
}

/** One problem per setting that places a non-production service somewhere other than locally. */
export function localStackProblems(
  appEnv: string,
  env: Readonly<Partial<Record<(typeof LOCATED_BY)[number], string>>>,
): string[] {
  const problems: string[] = [];
  for (const name of LOCATED_BY) {
    const value = env[name]?.trim();
    if (!value) continue;
    const url = URL.parse(value);
    // A URL that does not parse is refused by its own parser (the database's names it); the host
    // of one that does is never quoted (a project ref, a database host).
    if (url === null || isLocalHost(url.hostname)) continue;
    problems.push(
      `APP_ENV=${appEnv} runs only against a local stack, but ${name} is not local (loopback or ` +
        "a container name); a hosted project or remote database needs APP_ENV=production",
    );
  }
  return problems;
}
