/**
 * INI and TOML section headers (`[mistral]`, `[providers.openai]`, `[profile work]`): the names
 * under one are read with the section's name before them (`[mistral]` then `key = …`).
 */

const HEADER = /^[ \t]*\[\[?[ \t]*([^[\]\n=]{1,100}?)[ \t]*\]\]?[ \t]*(?:[#;].*)?$/;

/**
 * The section a line opens, or undefined when it opens none; `indent`: where its first character
 * other than a space or a tab is (firstNonBlank).
 */
export function sectionHeader(line: string, indent = firstNonBlank(line)): string | undefined {
  if (line.length > 256 || line[indent] !== "[") return undefined;
  const header = HEADER.exec(line);
  return header === null ? undefined : header[1].replace(/["']/g, "");
}

/** Where the first character other than a space or a tab is (the length when there is none). */
export function firstNonBlank(line: string): number {
  let i = 0;
  while (i < line.length && (line[i] === " " || line[i] === "\t")) i++;
  return i;
}
