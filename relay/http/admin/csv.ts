/**
 * One CSV field (RFC 4180): quoted when it holds a quote, a comma or a line break, its quotes doubled. A text that
 * a spreadsheet would run as a formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage return: a model name
 * or a key's name is anyone's to choose) is kept as text by a leading `'`. Nothing (null) is an empty field.
 */
export function csvField(value: string | number | boolean | null | undefined): string {
  if (value === null || value === undefined) return "";
  if (typeof value !== "string") return String(value);
  const text = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** One CSV line, ended by CRLF as RFC 4180 has it. */
export function csvLine(values: readonly (string | number | boolean | null | undefined)[]): string {
  return `${values.map(csvField).join(",")}\r\n`;
}
