/** How a command prints: human text by default, exactly one JSON document with `--json`. */
export interface Output {
  json: boolean;
}

/** Prints a value: JSON when asked, otherwise the human rendering. */
export function print(out: Output, value: unknown, human: () => string): void {
  process.stdout.write(out.json ? JSON.stringify(value, null, 2) + "\n" : human() + "\n");
}

/** Renders rows as an aligned text table. */
export function table(headers: string[], rows: (string | number | null | undefined)[][]): string {
  const cells = [headers, ...rows.map((r) => r.map((c) => (c === null || c === undefined ? "-" : String(c))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  return cells.map((r) => r.map((c, i) => (c ?? "").padEnd(widths[i]!)).join("  ").trimEnd()).join("\n");
}

/** Key/value lines, aligned. */
export function keyValues(pairs: [string, string | number | null | undefined][]): string {
  const w = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${(k + ":").padEnd(w + 1)} ${v ?? "-"}`).join("\n");
}

/** Bytes as a short human size. */
export function humanBytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 && i > 0 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}
