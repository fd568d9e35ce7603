/**
 * The node flags the daemon ships with. package.json's `start` script is the one place
 * they are written down; the Dockerfile ENTRYPOINT and the runbook's systemd unit carry
 * the same ones (test/deploy checks), and the benchmarks measure the broker with them.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The `--…` arguments between node and `bin/broker.js` in a command line. Node is
 * `node`, a path ending in `/node`, or `$NODE` (the runbook's name for the Node the
 * install was built with).
 */
export function nodeFlagsOf(commandLine: string): string[] {
  const words = commandLine.split(/\s+/);
  const node = words.findIndex((w) => w === 'node' || w.endsWith('/node') || w === '$NODE');
  const script = words.findIndex((w) => w.endsWith('bin/broker.js'));
  if (node === -1 || script <= node) return [];
  return words.slice(node + 1, script).filter((w) => w.startsWith('--'));
}

/** The flags of `npm start`, read from package.json under `root`. */
export function shippedNodeFlags(root: string): string[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    scripts: { start: string };
  };
  return nodeFlagsOf(pkg.scripts.start);
}
