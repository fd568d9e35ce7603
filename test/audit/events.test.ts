/**
 * The audit vocabulary (broker/audit/events.ts): one schema per event in one union that
 * the writer takes. The on-disk format did not change with it: a log written before the
 * typed events (fixtures/events-log, one line of every event as the broker writes it)
 * still verifies, and the same events written through the typed writer are the same
 * bytes. docs/contracts.md lists exactly the union's events.
 */
import { cpSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AUDIT_EVENT_NAMES, AuditEventSchema, type AuditEvent } from '../../broker/audit/events.js';
import { AuditLog, CHECKPOINT_FILE, LOG_FILE, verifyAudit } from '../../broker/audit/index.js';
import { tempDir } from './helpers.js';

const FIXTURES = join(import.meta.dirname, 'fixtures');
const OLD_LOG = join(FIXTURES, 'events-log');
const EVENTS = JSON.parse(readFileSync(join(FIXTURES, 'events.json'), 'utf8')) as AuditEvent[];
/** The clock the fixture was written with: one record a second from this instant. */
const T0 = Date.parse('2026-12-01T21:00:00.000Z');

describe('a log written before the typed events', () => {
  it('still verifies, and takes typed appends after it', async () => {
    const dir = tempDir();
    cpSync(OLD_LOG, dir, { recursive: true });
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: EVENTS.length });
    let t = T0 + 3_600_000;
    const log = await AuditLog.open(dir, { now: () => (t += 1000) });
    await log.append({ event: 'start', version: '0.1.0' });
    await log.close();
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: EVENTS.length + 1 });
  });

  it('is byte for byte what the typed writer writes for the same events', async () => {
    const dir = tempDir();
    let t = T0;
    const log = await AuditLog.open(dir, { now: () => (t += 1000) });
    for (const event of EVENTS) await log.append(event);
    await log.close();
    for (const file of [LOG_FILE, CHECKPOINT_FILE]) {
      expect(readFileSync(join(dir, file))).toEqual(readFileSync(join(OLD_LOG, file)));
    }
  });

  it('holds every event of the union, and each line parses as its event', () => {
    const lines = readFileSync(join(OLD_LOG, LOG_FILE), 'utf8').trimEnd().split('\n');
    const parsed = lines.map((line) => AuditEventSchema.safeParse(JSON.parse(line)));
    expect(parsed.map((p) => p.error?.message)).toEqual(lines.map(() => undefined));
    const written = new Set(parsed.map((p) => p.data?.event));
    // recovery is written by the log itself (a torn tail, a full disk): its own tests;
    // pin and undo came after this log was written (test/approval/matrix-pairing*.test.ts,
    // test/operations/undo/).
    expect(AUDIT_EVENT_NAMES.filter((name) => !written.has(name))).toEqual([
      'recovery',
      'pin',
      'undo',
    ]);
  });
});

describe('the vocabulary', () => {
  it('refuses, when read, an event it does not know and a known event missing a field', () => {
    expect(AuditEventSchema.safeParse({ event: 'outcom', outcome: 'ok' }).success).toBe(false);
    expect(AuditEventSchema.safeParse({ event: 'discard', instance: 'personal' }).success).toBe(
      false,
    );
  });

  it('refuses at compile time a misspelt event and a missing field', () => {
    const check = (_event: AuditEvent): void => undefined;
    // @ts-expect-error: no event is called `outcom`
    check({ event: 'outcom', outcome: 'ok' });
    // @ts-expect-error: a discard names its request
    check({ event: 'discard', instance: 'personal' });
    check({ event: 'discard', request: 3, instance: 'personal' });
  });

  it('is the list of events docs/contracts.md gives', () => {
    const contracts = readFileSync(
      join(import.meta.dirname, '..', '..', 'docs', 'contracts.md'),
      'utf8',
    );
    const row = /^\| `event` \| what happened: (.*?) +\|$/m.exec(contracts)?.[1] ?? '';
    const listed = [...row.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]);
    expect(listed).toEqual([...AUDIT_EVENT_NAMES]);
  });
});
