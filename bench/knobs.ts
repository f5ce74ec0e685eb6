/**
 * The benches' counts from the environment (BENCH_RUNS, SCHEDULE_BLOCKS, PROFILE_CALLS, …), checked
 * before anything runs: a typo stops the run naming the variable, instead of running zero times,
 * forever, or on NaN.
 */

/** `raw` as a positive integer, or `fallback` when it is unset. Throws naming `name`. */
export function parsePositiveInteger(name: string, raw: string | undefined, fallback: number) {
  if (raw === undefined) return fallback;
  const value = positiveInteger(raw);
  if (value === null) {
    throw new RangeError(`${name} must be a positive integer, not ${JSON.stringify(raw)}.`);
  }
  return value;
}

/**
 * `raw` as comma-separated positive integers, or `fallback` when it is unset. An empty list is
 * accepted only with `allowEmpty` (BENCH_GROWTH="" skips the growth runs). Throws naming `name`.
 */
export function parsePositiveIntegers(
  name: string,
  raw: string | undefined,
  fallback: readonly number[],
  allowEmpty = false,
): number[] {
  if (raw === undefined) return [...fallback];
  const values = raw.split(",").filter((part) => part.trim() !== "").map(positiveInteger);
  if (values.includes(null) || (values.length === 0 && !allowEmpty)) {
    throw new RangeError(
      `${name} must be ${allowEmpty ? "empty or " : ""}positive integers separated by commas, ` +
        `not ${JSON.stringify(raw)}.`,
    );
  }
  return values as number[];
}

/** One positive integer from the environment; a bad value ends the process naming it (exit 2). */
export function integerKnob(name: string, fallback: number): number {
  return knob(() => parsePositiveInteger(name, Deno.env.get(name), fallback));
}

/** Positive integers from the environment, comma-separated; a bad value ends the process (exit 2). */
export function integerListKnob(
  name: string,
  fallback: readonly number[],
  allowEmpty = false,
): number[] {
  return knob(() => parsePositiveIntegers(name, Deno.env.get(name), fallback, allowEmpty));
}

/**
 * Ends the process (exit 2) when `asked` names anything outside `known`, printing
 * `<prefix><the unknown ones>; choose from <known>.`
 */
export function exitOnUnknownChoices(
  asked: readonly string[],
  known: readonly string[],
  prefix: string,
): void {
  const unknown = asked.filter((name) => !known.includes(name));
  if (unknown.length === 0) return;
  console.error(`${prefix}${unknown.join(", ")}; choose from ${known.join(", ")}.`);
  Deno.exit(2);
}

function positiveInteger(text: string): number | null {
  const value = /^\s*\d+\s*$/.test(text) ? Number(text) : NaN;
  return Number.isSafeInteger(value) && value >= 1 ? value : null;
}

function knob<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    console.error((error as Error).message);
    Deno.exit(2);
  }
}
