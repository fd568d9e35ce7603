#!/usr/bin/env node
// The `broker` command. The TypeScript sources are compiled to dist/ by `npm ci`
// (the `prepare` script); this shim only loads the compiled entry point.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write(
    'broker: dist/ is missing; run `npm ci` (or `npm run build`) in the repository first\n',
  );
  process.exit(1);
}
const { main } = await import(entry.href);
process.exitCode = await main(process.argv.slice(2));
