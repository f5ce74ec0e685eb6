/**
 * INI and TOML section headers (`[mistral]`, `[providers.openai]`, `[profile work]`): the names
 * under one are read with the section's name before them (`[mistral]` then `key = …`).
 */

const HEADER = /^[ \t]*\[\[?[ \t]*([^[\]\n=]{1,100}?)[ \t]*\]\]?[ \t]*(?:[#;].*)?$/;

/** The section a line opens, or undefined when it opens none. */
export function sectionHeader(line: string): string | undefined {
  if (line.length > 256 || !/^[ \t]*\[/.test(line)) return undefined;
  const header = HEADER.exec(line);
  return header === null ? undefined : header[1].replace(/["']/g, "");
}
