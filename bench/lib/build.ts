/**
 * The benchmarks measure the broker and the CLI as they ship: compiled by tsc (what
 * `npx broker …` runs through bin/broker.js), not through the tsx loader, which adds
 * start-up time and memory. The build goes to node_modules/.cache so it never touches
 * the repository's dist/; module resolution still finds node_modules by walking up.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../support/processes.js';

export const COMPILED_DIR = join(ROOT, 'node_modules', '.cache', 'broker-bench-dist');

let built: string | undefined | null = null;

/**
 * Compiles the project once per process; returns the compiled cli/main.js, or undefined
 * (with the reason on stderr) when tsc produced nothing.
 */
export function compiledCli(): string | undefined {
  if (built !== null) return built;
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const run = spawnSync(
    process.execPath,
    [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', COMPILED_DIR],
    { cwd: ROOT, encoding: 'utf8' },
  );
  const main = join(COMPILED_DIR, 'cli', 'main.js');
  // tsc emits even with type errors (noEmitOnError is off); errors elsewhere in a shared
  // checkout must not stop the benchmark, so only a missing output counts.
  if (run.status !== 0)
    process.stderr.write(`bench: tsc reported errors:\n${run.stdout.slice(0, 2000)}\n`);
  built = existsSync(main) ? main : undefined;
  return built;
}
