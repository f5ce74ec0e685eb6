/** Parsers for the list-shaped settings; each names a problem without echoing a value. */

/** The database's URL as the driver gets it, and whether it reaches a transaction pooler. */
export interface DatabaseUrl {
  readonly url: string;
  readonly pooler: boolean;
}

/**
 * Whether to prepare statements: never through a transaction pooler, which hands each transaction
 * whichever server connection is free (where a statement prepared on another does not exist), nor
 * when DATABASE_PREPARE says not to (a pooler the URL does not show).
 */
export function preparesStatements(target: DatabaseUrl, setting: string | undefined): boolean {
  const off = setting?.trim();
  return !target.pooler && off !== "false" && off !== "0";
}

/**
 * DATABASE_URL (or SUPABASE_DB_URL), checked as the driver will read it. The value holds the
 * password, and both the URL parser and the driver quote a URL they cannot read in full in their
 * errors, so one that does not parse is named here and never handed on.
 *
 * Supabase's transaction poolers are Supavisor on port 6543 or any URL marked `?pgbouncer=true`
 * (the convention Prisma and Supabase's docs use for PgBouncer); the hint itself is dropped, as
 * the driver would send it to the server as a startup parameter.
 */
export function parseDatabaseUrl(
  url: string,
  name: string,
  problems: string[],
): DatabaseUrl | null {
  if (!/^postgres(ql)?:\/\//.test(url)) {
    problems.push(`${name} must be a postgres:// or postgresql:// URL`);
    return null;
  }
  const unreadable = `${name} is not a valid URL: give one host, and percent-encode any of ` +
    "# / ? % @ , in the user name and password";
  // The driver takes the host after the first @ (where the URL parser takes the last), splits it
  // at commas into hosts tried in turn, and decodes it: any of these would let the driver connect
  // to a host the URL parser, and so the local-stack check, never saw.
  const authority = url.slice(url.indexOf("://") + 3).split(/[?/]/)[0];
  const host = authority.slice(authority.indexOf("@") + 1);
  if (authority.split("@").length > 2 || authority.includes(",") || host.includes("%")) {
    problems.push(unreadable);
    return null;
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
    // The driver decodes each part; a stray % would fail there, after this check.
    for (const part of [parsed.username, parsed.password, parsed.hostname, parsed.pathname]) {
      decodeURIComponent(part);
    }
    // Parsed, but not as meant: a password's # / ? read as where the host ends (the rest of it
    // then lands in the fragment, the database name or the query, where an @ is left over).
    if (parsed.hash !== "" || (parsed.pathname + parsed.search).includes("@")) {
      throw new TypeError();
    }
  } catch {
    problems.push(unreadable);
    return null;
  }
  const pooler = parsed.port === "6543" || parsed.searchParams.get("pgbouncer") === "true";
  if (!parsed.searchParams.has("pgbouncer")) return { url, pooler };
  parsed.searchParams.delete("pgbouncer");
  return { url: parsed.toString(), pooler };
}

/**
 * SUPABASE_PUBLISHABLE_KEYS as Supabase provides it: a JSON object of named keys
 * (`{"default":"sb_publishable_…"}`). A bare key is accepted too.
 */
export function parsePublishableKeys(value: string | undefined, problems: string[]): string[] {
  if (value === undefined) return [];
  if (!value.startsWith("{")) return [value];
  try {
    const keys = Object.values(JSON.parse(value) as Record<string, unknown>);
    if (keys.every((key): key is string => typeof key === "string" && key.length > 0)) return keys;
  } catch {
    // reported below
  }
  problems.push("SUPABASE_PUBLISHABLE_KEYS must be a JSON object of named keys");
  return [];
}

export function parseOrigins(list: string | undefined, problems: string[]): string[] {
  if (list === undefined) return [];
  return list.split(",").map((o) => o.trim()).filter(Boolean)
    .map((origin) => parseOrigin(origin, "ALLOWED_ORIGINS", problems))
    .filter((origin): origin is string => origin !== null);
}

/**
 * Exactly an origin: a scheme and a host (a name, or an IP literal), a port if any, nothing after
 * it but one slash. The URL parser takes `https://*.example.com` as a host, which no page's origin
 * ever equals and which sign-in would then put in its messages as their domain; and a path would
 * be dropped without a word.
 */
export function parseOrigin(value: string, name: string, problems: string[]): string | null {
  const url = URL.parse(value);
  if (
    url !== null && (url.protocol === "https:" || url.protocol === "http:") &&
    ORIGIN_HOST.test(url.hostname) && url.username === "" && url.password === "" &&
    url.pathname === "/" && url.search === "" && url.hash === "" && !value.endsWith("?") &&
    !value.endsWith("#")
  ) {
    return url.origin;
  }
  problems.push(`${name} must hold http(s) origins like https://app.example.com`);
  return null;
}

/** A DNS name (as the URL parser writes it: lower case, punycode), IPv4, or a bracketed IPv6. */
const ORIGIN_HOST = /^(?:[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?|\[[0-9a-f:.]+\])$/;

export function parseChainIds(list: string | undefined, problems: string[]): number[] | null {
  if (list === undefined || list === "*") return null;
  const ids = list.split(",").map((id) => Number(id.trim()));
  if (ids.some((id) => !Number.isSafeInteger(id) || id < 1)) {
    problems.push("ALLOWED_CHAIN_IDS must be positive integers separated by commas, or *");
    return null;
  }
  return ids;
}

/**
 * `CHAIN_RPC_URLS=1=https://…,8453=https://…`: a comma starts a new entry only before `<digits>=`,
 * so a comma inside a URL stays in it. Problems name the entry, never the URL (it may hold a key).
 * Production wants https: an RPC answer decides whether a contract wallet's signature is valid.
 */
export function parseChainRpcUrls(
  list: string | undefined,
  production: boolean,
  problems: string[],
): Map<number, string> {
  const urls = new Map<number, string>();
  if (list === undefined) return urls;
  for (const [index, entry] of list.split(/,\s*(?=\d+\s*=)/).entries()) {
    const label = `CHAIN_RPC_URLS entry ${index + 1}`;
    const match = /^\s*(\d{1,16})\s*=\s*(\S+)\s*$/.exec(entry);
    const chainId = match === null ? NaN : Number(match[1]);
    if (match === null || !Number.isSafeInteger(chainId) || chainId < 1) {
      problems.push(`${label} must be <chainId>=<http(s) URL>`);
      continue;
    }
    let url: URL | null = null;
    try {
      url = new URL(match[2]);
    } catch {
      // reported below
    }
    const schemes = production ? ["https:"] : ["https:", "http:"];
    if (url === null || !schemes.includes(url.protocol)) {
      problems.push(
        `${label} (chain ${chainId}) must be an ${production ? "https" : "http(s)"} URL`,
      );
      continue;
    }
    if (urls.has(chainId)) {
      problems.push(`${label} repeats chain ${chainId}`);
      continue;
    }
    urls.set(chainId, url.href);
  }
  return urls;
}
