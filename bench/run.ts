/**
 * `npm run bench`: runs every bench/*.bench.ts (or those named on the command line),
 * prints the report and writes bench/RESULTS.md.
 */
import { readdirSync, writeFileSync } from 'node:fs';
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
if (only.length === 0) writeFileSync(`${dir}/RESULTS.md`, report);
const missed = sections.flatMap((s) => s.rows).filter((r) => r.met === false);
if (missed.length > 0)
  process.stderr.write(`bench: ${missed.length} target(s) missed; see notes\n`);
