/**
 * Vitest's global setup: every temp folder the tests make (the stages, data folders and
 * configs under os.tmpdir(), the brokers' and CLIs' own) goes under one folder of this
 * run, removed when the run ends, so that a run leaves nothing behind in the machine's
 * temp folder. Workers and the processes they start inherit TMPDIR.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const previous = process.env.TMPDIR;
  const run = mkdtempSync(join(tmpdir(), 'broker-tests-'));
  process.env.TMPDIR = run;
  return () => {
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
    rmSync(run, { recursive: true, force: true });
  };
}
