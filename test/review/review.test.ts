/**
 * The review runner reports what happened: a surprise (wrong verdict, a throw, a hang,
 * a failed setup) is a failure on its own line, never swallowed, and the closing line
 * counts passes and failures.
 */
import { describe, expect, it } from 'vitest';
import { formatResult, runGroups, settle, summaryLine, type Group } from '../../review/runner.js';

async function run(groups: Group[], filter?: (g: string, n: string) => boolean) {
  const lines: string[] = [];
  const summary = await runGroups(groups, (l) => lines.push(l), filter ? { filter } : {});
  return { lines, summary };
}

describe('review runner', () => {
  it('prints one line per case with the expected and actual verdicts', async () => {
    const { lines, summary } = await run([
      {
        title: 'g',
        build: () => ({
          cases: [
            { name: 'agrees', expect: 'refused', run: () => 'refused' },
            { name: 'disagrees', expect: 'refused', run: async () => 'allowed' },
          ],
        }),
      },
    ]);
    expect(lines).toContain('✓ agrees — expected refused, got refused');
    expect(lines).toContain('✗ disagrees — expected refused, got allowed');
    expect(summary).toMatchObject({ passed: 1, failed: 1 });
    expect(summaryLine(summary)).toBe('1 passed, 1 failed');
  });

  it('a case that throws or hangs is a failure, and the run goes on', async () => {
    const { lines, summary } = await run([
      {
        title: 'g',
        build: () => ({
          cases: [
            {
              name: 'throws',
              expect: 'ok',
              run: () => {
                throw new TypeError('boom');
              },
            },
            {
              name: 'hangs',
              expect: 'ok',
              timeoutMs: 30,
              run: () => new Promise<string>(() => {}),
            },
            { name: 'after', expect: 'ok', run: () => 'ok' },
          ],
        }),
      },
    ]);
    expect(lines).toContain('✗ throws — expected ok, got threw TypeError: boom');
    expect(lines).toContain('✗ hangs — expected ok, got timed out after 30 ms');
    expect(lines).toContain('✓ after — expected ok, got ok');
    expect(summary).toMatchObject({ passed: 1, failed: 2 });
  });

  it('a group whose setup fails counts as a failure; later groups still run', async () => {
    const { lines, summary } = await run([
      {
        title: 'broken',
        build: () => {
          throw new Error('no broker');
        },
      },
      { title: 'fine', build: () => ({ cases: [{ name: 'c', expect: 'x', run: () => 'x' }] }) },
    ]);
    expect(lines).toContain('✗ broken: setup — expected ready, got threw Error: no broker');
    expect(summary).toMatchObject({ passed: 1, failed: 1 });
  });

  it('runs the teardown even when a case failed, and reports a failing teardown', async () => {
    let closed = false;
    const { lines } = await run([
      {
        title: 'g',
        build: () => ({
          cases: [{ name: 'c', expect: 'x', run: () => 'y' }],
          teardown: () => {
            closed = true;
            throw new Error('stuck');
          },
        }),
      },
    ]);
    expect(closed).toBe(true);
    expect(lines.some((l) => l.includes('teardown of "g": threw Error: stuck'))).toBe(true);
  });

  it('tags a finding case with its id, and filters by group or name', async () => {
    const groups: Group[] = [
      {
        title: 'wall',
        build: () => ({
          cases: [
            { name: 'known bug', expect: 'no_grant', finding: 'F1', run: () => 'allowed' },
            { name: 'other', expect: 'a', run: () => 'a' },
          ],
        }),
      },
    ];
    const { lines, summary } = await run(groups, (_g, n) => n.includes('known'));
    expect(lines).toContain('✗ [F1] known bug — expected no_grant, got allowed');
    expect(summary.results).toHaveLength(1);
    expect(summary.results[0]).toMatchObject({ finding: 'F1', ok: false });
    expect(formatResult({ ...summary.results[0]!, ok: true })).toMatch(/^✓ \[F1\] /);
  });

  it('settle turns a rejection into a verdict and clears its timer', async () => {
    expect(await settle(() => Promise.reject(new Error('x\nsecond line')), 1_000)).toBe(
      'threw Error: x',
    );
    expect(await settle(() => 'fine', 1_000)).toBe('fine');
  });
});
