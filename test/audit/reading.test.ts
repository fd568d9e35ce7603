/**
 * Every reader of the log reads events with the writer's union (broker/audit/reading.ts):
 * `broker audit verify` reports a record whose event this version does not read (a
 * misspelt or newer event, a missing field) as a schema finding, apart from the chain,
 * which such a record never breaks; `broker audit tail` marks it and goes on. Logs of
 * older brokers verify as before.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AuditLog, verifyAudit } from '../../broker/audit/index.js';
import { LISTED_FINDINGS, readEvent, SchemaFindings } from '../../broker/audit/reading.js';
import { humanRecord } from '../../cli/owner/audit-tail.js';
import { createAuditCommand } from '../../cli/owner/audit.js';
import { appendLine } from '../../support/audit-line.js';
import type { AuditEventName } from '../../broker/audit/events.js';
import { logLines, tempDir, tickingClock, writeLogBytes } from './helpers.js';

const FIXTURES = join(import.meta.dirname, 'fixtures');
const CALL = { surface: 'agent', tool: 'read', correlation_id: 'c-1', instance: 'personal' };

/** A log of: a good intent, a misspelt event, an outcome without `outcome`, a good stop. */
async function logWithFindings(): Promise<string> {
  const dir = tempDir();
  const log = await AuditLog.open(dir, { now: tickingClock() });
  await log.append({ event: 'intent', ...CALL, path: 'Docs/a.txt', grants: [1] });
  await appendLine(log, 'intnet' as AuditEventName, { ...CALL, path: 'Docs/b.txt' });
  await appendLine(log, 'outcome', { ...CALL, code: 'not_found' });
  await log.append({ event: 'stop' });
  await log.close();
  return dir;
}

async function verify(
  dir: string,
): Promise<{ code: number; out: Record<string, unknown>; err: string }> {
  let stdout = '';
  let stderr = '';
  const code = await createAuditCommand({
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    cwd: () => dir,
  }).run(['verify', '--data-dir', dir]);
  return { code, out: JSON.parse(stdout) as Record<string, unknown>, err: stderr };
}

describe('broker audit verify: schema findings, apart from the chain', () => {
  it('reports a misspelt event and a missing field, and the chain stays intact (exit 0)', async () => {
    const dir = await logWithFindings();
    const r = await verify(dir);
    expect(r.code).toBe(0);
    expect(r.out).toMatchObject({ status: 'ok', records: 4, head: { seq: 4 } });
    expect(r.out.schema).toEqual({
      count: 2,
      first: [
        { seq: 2, event: 'intnet', problem: expect.stringMatching(/does not know/) },
        { seq: 3, event: 'outcome', problem: expect.stringMatching(/^outcome: /) },
      ],
    });
    expect(r.err).toMatch(
      /2 record\(s\) with an event this version does not read .*not a chain break/,
    );
  });

  it('reports findings beside a chain break, which alone makes the log corrupt (exit 4)', async () => {
    const dir = await logWithFindings();
    const lines = logLines(dir);
    lines[3] = (lines[3] ?? '').replace('"stop"', '"stap"');
    writeLogBytes(dir, `${lines.join('\n')}\n`);
    const r = await verify(dir);
    expect(r.code).toBe(4);
    expect(r.out).toMatchObject({ status: 'corrupt', seq: 4 });
    expect(r.out.error).toMatch(/not in canonical form|hash does not match/);
    // Only the records of the valid prefix are read as events.
    expect(r.out.schema).toMatchObject({ count: 2 });
  });

  it('a log of every event from before the typed events verifies with no finding', async () => {
    const dir = join(FIXTURES, 'events-log');
    expect(verifyAudit(dir)).toMatchObject({ ok: true, schema: { count: 0, first: [] } });
    const r = await verify(dir);
    expect(r.code).toBe(0);
    expect(r.out).not.toHaveProperty('schema');
  });

  it('a log from before ASCII lines verifies; its request without `tool` is a finding', async () => {
    // Written by an older broker, whose request lines did not name the tool yet.
    const r = await verify(join(FIXTURES, 'raw-utf8-log'));
    expect(r.code).toBe(0);
    expect(r.out).toMatchObject({ status: 'ok', records: 6 });
    expect(r.out.schema).toEqual({
      count: 1,
      first: [{ seq: 4, event: 'request', problem: expect.stringMatching(/^tool: /) }],
    });
  });

  it('lists the first few findings and counts them all', () => {
    const findings = new SchemaFindings();
    for (let seq = 1; seq <= LISTED_FINDINGS + 5; seq += 1) findings.add(seq, { event: 'later' });
    findings.add(99, { event: 'stop' });
    const report = findings.report();
    expect(report.count).toBe(LISTED_FINDINGS + 5);
    expect(report.first.map((f) => f.seq)).toEqual(
      Array.from({ length: LISTED_FINDINGS }, (_, i) => i + 1),
    );
  });
});

describe('an event as a reader reads it', () => {
  it.each([
    [{ event: 'stop' }, 'known'],
    [{ event: 'discard', request: 3, instance: 'personal', extra: [1] }, 'known'],
    [{ event: 'discard', instance: 'personal' }, 'invalid'],
    [{ event: 'discard', request: 'three', instance: 'personal' }, 'invalid'],
    [{ event: 'outcom', outcome: 'ok' }, 'unknown'],
    [{ event: 3 }, 'unknown'],
    [{}, 'unknown'],
  ])('%j is %s', (record, kind) => {
    expect(readEvent(record).kind).toBe(kind);
  });

  it('names the missing field', () => {
    expect(readEvent({ event: 'discard', instance: 'personal' })).toMatchObject({
      kind: 'invalid',
      name: 'discard',
      problem: expect.stringMatching(/^request: /),
    });
  });
});

describe('broker audit tail marks what it does not read, and goes on', () => {
  it('shows a known event as it is, and marks an unknown one and one missing a field', async () => {
    const dir = await logWithFindings();
    const shown = logLines(dir).map(humanRecord);
    expect(shown[0]).toMatch(/ #1 intent correlation_id=c-1 /);
    expect(shown[1]).toMatch(/ #2 intnet \[unknown event\] correlation_id=c-1 /);
    expect(shown[2]).toMatch(
      / #3 outcome \[not as this version writes it: outcome: [^\]]+\] code=not_found /,
    );
    expect(shown[3]).toMatch(/ #4 stop$/);
  });

  it.each(['[1,2]', '"text"', 'null', '{"seq":1}'])('does not crash on %s', (line) => {
    expect(typeof humanRecord(line)).toBe('string');
  });
});
