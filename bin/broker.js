#!/usr/bin/env node
// The `broker` command. `npm ci` (the `prepare` script) builds dist/: the TypeScript
// compiled by tsc, the agent's file dist/broker-cli.mjs (the client commands bundled
// into one file, scripts/build-cli.ts), and dist/node.json (the Node it was built with,
// scripts/record-node.ts). This shim only picks one and loads it.
//
// The client commands run the agent's file, so they behave and start as they do on an
// agent's host: one file to load instead of a few dozen modules. Everything else (the
// owner's commands, help, version) runs the full CLI, which loads the daemon only for
// the commands that need it; before that, this shim refuses a Node older than 22, on
// which the daemon's native SQLite module would crash (node-check.js).
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { nodeProblem } from './node-check.js';

// The names in cli/client/commands/index.ts (test/cli/client/bundle.test.ts keeps them equal).
const CLIENT_COMMANDS = ['fetch', 'push', 'checkout', 'checkin', 'mcp'];

/** dist/node.json, or undefined when it is missing or not what the build writes. */
function builtNode() {
  try {
    const built = JSON.parse(readFileSync(new URL('../dist/node.json', import.meta.url), 'utf8'));
    return typeof built.version === 'string' && typeof built.path === 'string' ? built : undefined;
  } catch {
    return undefined;
  }
}

const client = CLIENT_COMMANDS.includes(process.argv[2] ?? '');
if (!client) {
  const running = { version: process.version, execPath: process.execPath };
  const problem = nodeProblem(running, builtNode());
  if (problem !== undefined) {
    process.stderr.write(`broker: ${problem.error}\n  next: ${problem.nextStep}\n`);
    process.exit(1);
  }
}
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
