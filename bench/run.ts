/**
 * `npm run bench`: runs every bench/*.bench.ts (or those named on the command line),
 * prints the report and writes bench/RESULTS.md. A run of some of them replaces their
 * sections in RESULTS.md (by title) and keeps the others, under a header that says so.
 */
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type Bench, type BenchSection, renderSection } from './harness.js';

const dir = fileURLToPath(new URL('.', import.meta.url));
const only = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();

const sections: BenchSection[] = [];
for (const file of files) {
  process.stderr.write(`bench: running ${file}\n`);
  const mod = (await import(pathToFileURL(`${dir}/${file}`).href)) as { default: Bench };
  sections.push(await mod.default());
}

const cpu = cpus();
const header = [
  '# Benchmark results',
  '',
  `Machine: ${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, Node ${process.version}, ${process.platform}/${process.arch}.`,
  `Run: ${new Date().toISOString()}. Every figure is compared with a baseline measured in the same run.`,
].join('\n');
const report = [header, ...sections.map(renderSection)].join('\n\n') + '\n';
process.stdout.write(report);
const results = `${dir}/RESULTS.md`;
if (only.length === 0) writeFileSync(results, report);
else if (existsSync(results)) writeFileSync(results, merged(readFileSync(results, 'utf8')));

/**
 * RESULTS.md with this run's sections in place of (or after) those of the same title; the
 * previous header stays (its run date is the other sections'), with a line per partial run.
 */
function merged(previous: string): string {
  const [head = '', ...old] = previous.split(/^(?=## )/m);
  const fresh = new Map(sections.map((s) => [`## ${s.title}`, renderSection(s)]));
  const kept = old.map((text) => {
    const title = text.split('\n', 1)[0] as string;
    const replacement = fresh.get(title);
    fresh.delete(title);
    return replacement ?? text.trimEnd();
  });
  const rerun = `Re-run on ${new Date().toISOString()}, Node ${process.version} (\`npm run bench ${only.join(' ')}\`): ${sections.map((s) => `"${s.title}"`).join(', ')}.`;
  return [`${head.trimEnd()}\n${rerun}`, ...kept, ...fresh.values()].join('\n\n') + '\n';
}
const missed = sections.flatMap((s) => s.rows).filter((r) => r.met === false);
if (missed.length > 0)
  process.stderr.write(`bench: ${missed.length} target(s) missed; see notes\n`);
