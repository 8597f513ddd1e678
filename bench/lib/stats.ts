/** Nearest-rank percentile of an unsorted sample (sorted in place). */
export function percentile(values: number[], p: number, sorted = false): number {
  if (values.length === 0) return NaN;
  if (!sorted) values.sort((a, b) => a - b);
  const rank = Math.min(values.length - 1, Math.max(0, Math.ceil((p / 100) * values.length) - 1));
  return values[rank];
}

export const round = (value: number, digits = 1): number =>
  Number.isFinite(value) ? Math.round(value * 10 ** digits) / 10 ** digits : value;

/** A fixed-width text table. */
export function textTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

/** The same table as GitHub markdown. */
export function markdownTable(header: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map((_, i) => (i === 0 ? '---' : '---:'))), ...rows.map(line)].join('\n');
}
