/**
 * One contender in the concurrent-decision test: opens the grant store on a shared
 * file, waits for the starting gun (a file appearing), decides, prints the result.
 * Run by concurrency.test.ts as `node --import tsx race-worker.ts <db> <id> <kind> <gun>`.
 */
import { existsSync } from 'node:fs';
import { GrantStore } from '../../broker/grants/index.js';

const [db, id, kind, gun] = process.argv.slice(2);
if (db === undefined || id === undefined || kind === undefined || gun === undefined) {
  throw new Error('usage: race-worker <db> <id> <approve|deny|approve1> <gun-file>');
}
const store = GrantStore.open(db, { now: () => Date.now(), busyTimeoutMs: 20_000 });
process.stdout.write('ready\n');
while (!existsSync(gun)) await new Promise((r) => setTimeout(r, 1));
const by = `worker-${process.pid}`;
const result =
  kind === 'deny'
    ? store.decide(Number(id), { kind: 'deny', by })
    : store.decide(Number(id), {
        kind: 'approve',
        durationMs: 3_600_000,
        maxMs: 86_400_000,
        by,
        ...(kind === 'approve1' ? { items: [1] } : {}),
      });
store.close();
process.stdout.write(
  `${JSON.stringify({ by, ok: result.ok, code: result.ok ? null : result.code })}\n`,
);
