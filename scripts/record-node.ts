/**
 * Records which Node built this install, so that bin/broker.js can name it when it
 * refuses an older one and the runbook's systemd unit starts the same Node by its path.
 * Run by `npm run build` and `npm ci` (the `prepare` script), under the Node that runs
 * them.
 *
 *   tsx scripts/record-node.ts [OUTFILE]    (default dist/node.json)
 *
 * Writes `{"path": …, "version": …}`: the Node's absolute path and its version. A Node
 * that cannot run the broker (older than 22) is not recorded: the build says so in the
 * words of bin/broker.js, and a record already there stays. So an `npx broker` under
 * Node 20, whose first run in a folder builds the package again, cannot replace the
 * install's Node with itself. It does not fail the build: a failed build there leaves
 * npx's cache entry for the folder broken, and every later `npx broker` with it, on any
 * Node; bin/broker.js refuses that Node when it runs anyway.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nodeProblem, USE_NODE, type BuiltNode } from '../bin/node-check.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const NODE_RECORD = resolve(ROOT, 'dist', 'node.json');

export function thisNode(): BuiltNode {
  return { path: process.execPath, version: process.version };
}

/** Writes the record of `node` to `outfile`; the refusal, writing nothing, for an old Node. */
export function recordNode(
  outfile: string,
  node: BuiltNode = thisNode(),
): { ok: true } | { ok: false; error: string } {
  const problem = nodeProblem({ version: node.version, execPath: node.path }, undefined);
  if (problem !== undefined) return { ok: false, error: problem.error };
  mkdirSync(dirname(outfile), { recursive: true });
  writeFileSync(outfile, `${JSON.stringify(node, null, 2)}\n`);
  return { ok: true };
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const recorded = recordNode(resolve(process.argv[2] ?? NODE_RECORD));
  if (!recorded.ok) {
    process.stderr.write(
      `npm run build: ${recorded.error}; this Node is not recorded as the install's\n  next: run ${USE_NODE}, then npm ci again\n`,
    );
  }
}
