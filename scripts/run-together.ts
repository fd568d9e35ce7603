/**
 * `node --import tsx scripts/run-together.ts SCRIPT...`: runs the named npm scripts of this
 * package at the same time (scripts/lib/together.ts) and fails if any of them fails.
 * `npm run checks` runs the type check, the lint and the layer check this way: each is
 * one thread, so on two or more CPUs they take as long as the slowest, not the sum.
 */
import { npmScript, runTogether } from './lib/together.js';

const names = process.argv.slice(2);
if (names.length === 0) {
  process.stderr.write(
    'usage: run-together.ts SCRIPT [SCRIPT ...] (npm scripts of this package)\n',
  );
  process.exit(2);
}
process.exitCode = await runTogether(names.map(npmScript));
