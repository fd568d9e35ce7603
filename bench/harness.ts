/**
 * Benchmark harness. Each `bench/*.bench.ts` exports a default function returning a
 * section; every figure stands next to a baseline measured in the same run.
 */
export interface BenchRow {
  /** What was measured, e.g. "appends/s, 64 producers". */
  readonly metric: string;
  readonly value: number;
  readonly unit: string;
  /** The baseline measured in this run, with its name. */
  readonly baseline?: { readonly name: string; readonly value: number };
  /** The target in words, e.g. "≥ 10× baseline". */
  readonly target?: string;
  readonly met?: boolean;
}

export interface BenchSection {
  readonly title: string;
  readonly rows: readonly BenchRow[];
  /** What limited a missed target, or anything a reader should know. */
  readonly notes?: readonly string[];
}

export type Bench = () => Promise<BenchSection>;

/** Percentile of a sorted copy (nearest-rank). */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (Math.abs(n) >= 1000) return Math.round(n).toLocaleString('en-US');
  if (Math.abs(n) >= 10) return n.toFixed(1);
  return n.toFixed(3);
}

export function renderSection(section: BenchSection): string {
  const lines = [
    `## ${section.title}`,
    '',
    '| metric | value | baseline | ratio | target | met |',
    '|---|---|---|---|---|---|',
  ];
  for (const r of section.rows) {
    const base = r.baseline ? `${fmt(r.baseline.value)} ${r.unit} (${r.baseline.name})` : '—';
    const ratio =
      r.baseline && r.baseline.value !== 0 ? `${(r.value / r.baseline.value).toFixed(2)}×` : '—';
    const met = r.met === undefined ? '—' : r.met ? 'yes' : '**no**';
    lines.push(
      `| ${r.metric} | ${fmt(r.value)} ${r.unit} | ${base} | ${ratio} | ${r.target ?? '—'} | ${met} |`,
    );
  }
  if (section.notes && section.notes.length > 0) {
    lines.push('', ...section.notes.map((n) => `- ${n}`));
  }
  return lines.join('\n');
}
