/**
 * The one definition of a loopback host, shared by the functions' CORS and sign-in outside
 * production (functions/_shared/http/local-origins.ts) and local-stack check
 * (functions/_shared/config/local-stack.ts), and by the client package's plain-http rule
 * (sdk/src/server.ts, sdk/src/session-check.ts).
 */

/**
 * Whether `hostname`, as URL spells one (lower case, IPv4 dotted, IPv6 in brackets), is loopback by
 * definition: `localhost` and `*.localhost` (RFC 6761; browsers resolve them to loopback
 * themselves), 127.0.0.0/8, `[::1]`, and 127.0.0.0/8 mapped into IPv6 (`[::ffff:7f00:1]`). A name
 * that merely resolves there (`127.0.0.1.nip.io`) is not.
 */
export function isLoopbackHostname(hostname: string): boolean {
  return hostname === "localhost" || hostname.endsWith(".localhost") || hostname === "[::1]" ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname) ||
    /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(hostname);
}
