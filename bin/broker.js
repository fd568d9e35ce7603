#!/usr/bin/env node
// The `broker` command. `npm ci` (the `prepare` script) builds dist/: the TypeScript
// compiled by tsc, and the agent's file dist/broker-cli.mjs (the client commands bundled
// into one file, scripts/build-cli.ts). This shim only picks one and loads it.
//
// The client commands run the agent's file, so they behave and start as they do on an
// agent's host: one file to load instead of a few dozen modules. Everything else (the
// owner's commands, help, version) runs the full CLI, which loads the daemon only for
// the commands that need it.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// The names in cli/client/commands/index.ts (test/cli/bundle.test.ts keeps them equal).
const CLIENT_COMMANDS = ['fetch', 'push', 'checkout', 'checkin', 'mcp'];

const client = CLIENT_COMMANDS.includes(process.argv[2] ?? '');
const entry = new URL(client ? '../dist/broker-cli.mjs' : '../dist/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write(
    'broker: dist/ is missing; run `npm ci` (or `npm run build`) in the repository first\n',
  );
  process.exit(1);
}
if (client) {
  // Runs the command as it loads, with this process's arguments.
  await import(entry.href);
} else {
  const { main } = await import(entry.href);
  process.exitCode = await main(process.argv.slice(2));
}
