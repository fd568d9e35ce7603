/**
 * Records which Node built this install, for bin/broker.js to refuse another one before
 * the daemon's native SQLite module (built by `npm ci` for this Node's ABI) is loaded,
 * and for the runbook's systemd unit to start the same Node. Run by `npm run build` and
 * `npm ci` (the `prepare` script), under the Node that runs them.
 *
 *   tsx scripts/record-node.ts [OUTFILE]    (default dist/node.json)
 *
 * Writes `{"path": …, "version": …, "modules": …}`: the Node's absolute path, its
 * version and its ABI (`process.versions.modules`).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BuiltNode } from '../bin/node-check.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const NODE_RECORD = resolve(ROOT, 'dist', 'node.json');

export function thisNode(): BuiltNode {
  return {
    path: process.execPath,
    version: process.version,
    modules: process.versions.modules,
  };
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outfile = resolve(process.argv[2] ?? NODE_RECORD);
  mkdirSync(dirname(outfile), { recursive: true });
  writeFileSync(outfile, `${JSON.stringify(thisNode(), null, 2)}\n`);
}
