/**
 * How a client described itself at sign-in (its User-Agent), kept with the session so a creator can
 * tell its sessions apart. A header is the client's text: only printable ASCII is kept, runs of
 * spaces are one, and it is cut short, so what a list shows is bounded and cannot hide characters.
 */

/** The most a session keeps (public.auth_sessions checks the same). */
export const MAX_CLIENT_DESCRIPTION = 160;

/** The request's User-Agent, cleaned and cut to MAX_CLIENT_DESCRIPTION; null when none is left. */
export function clientDescription(request: Request): string | null {
  const agent = request.headers.get("user-agent");
  if (agent === null) return null;
  const cleaned = agent.replace(/[^\x20-\x7e]+/g, " ").replace(/ {2,}/g, " ").trim();
  const cut = cleaned.slice(0, MAX_CLIENT_DESCRIPTION).trimEnd();
  return cut === "" ? null : cut;
}
