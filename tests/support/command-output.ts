/** Asking a program on this machine a question, for tests and the bench alike. */

/**
 * `command args…`'s trimmed stdout, or null when it is missing, fails or exits non-zero: the
 * callers probe for tools and facts that may not be there (pg_config, a `postgres` user, git) and
 * fall back on null, so nothing here throws and stderr is not shown.
 */
export async function commandOutput(command: string, args: string[]): Promise<string | null> {
  try {
    const output = await new Deno.Command(command, { args, stdout: "piped", stderr: "null" })
      .output();
    return output.success ? new TextDecoder().decode(output.stdout).trim() : null;
  } catch {
    return null;
  }
}
