/**
 * Issue 14.7: audit lines are printable ASCII. An agent's path or reason with a bidi
 * override, a line separator, NEL, a C1 control or DEL is written as `\uXXXX`, so no
 * terminal reorders or repaints it and no line-based reader counts more lines than
 * records. The hash is over the values, so the escaping changes no hash, and logs
 * written before the change (raw UTF-8, fixtures/raw-utf8-log) still verify.
 */
import { cpSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  AuditLog,
  canonicalJson,
  sha256Hex,
  verifyAudit,
  verifyAuditBytes,
  ZERO_HASH,
} from '../../broker/audit/index.js';
import { serializeCheckpoint } from '../../broker/audit/checkpoint.js';
import { buildRecord, RESERVED_FIELDS } from '../../broker/audit/record.js';
import { auditVerdict } from '../../review/lib/audit-check.js';
import { logLines, readLog, tempDir, tickingClock, writeLogBytes } from './helpers.js';
import { appendLine } from '../../support/audit-line.js';
import type { AuditEventName } from '../../broker/audit/events.js';

const PRINTABLE_ASCII_LINE = /^[\x20-\x7e]*$/;
const TS = '2026-01-02T03:04:05.678Z';
/** A log the broker wrote before ASCII lines: bidi, U+2028/9, NEL, CSI, DEL, emoji raw. */
const RAW_FIXTURE = join(import.meta.dirname, 'fixtures', 'raw-utf8-log');
/** Every line break a reader might split on (JavaScript, Python's splitlines, Unicode). */
// eslint-disable-next-line no-control-regex
const ANY_LINE_BREAK = /\r\n|[\n\r\v\f\x1c-\x1e\u0085\u2028\u2029]/;

/** Hostile text the way an agent can send it in a path. */
const HOSTILE = 'Docs2/\u202Efdp.txt \u2028\u2029\u0085\u009b[2J\u007f\u200b\ufeff😀\ud800é';

describe('attack: a refused path with bidi and line-separator characters', () => {
  it('is written as escapes: every line printable ASCII, one line per record', async () => {
    const dir = tempDir();
    const log = await AuditLog.open(dir, { now: tickingClock() });
    await appendLine(log, 'refused', { surface: 'agent', tool: 'list', path: HOSTILE });
    await appendLine(log, 'request', { reason: `read ${HOSTILE}`, items: [{ path: HOSTILE }] });
    await log.close();
    const text = readLog(dir).toString('latin1');
    const lines = logLines(dir);
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(line).toMatch(PRINTABLE_ASCII_LINE);
    // A terminal would show `Docs2/txt.pdf`; the line shows what was sent.
    expect(lines[0]).toContain(
      '"path":"Docs2/\\u202efdp.txt \\u2028\\u2029\\u0085\\u009b[2J\\u007f',
    );
    expect(lines[0]).toContain('\\ud83d\\ude00\\ud800\\u00e9');
    expect(text.replace(/\n$/, '').split(ANY_LINE_BREAK)).toHaveLength(2);
    const parsed = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
    expect(parsed.path).toBe(HOSTILE);
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: 2 });
  });

  it('the hash is the sha256 of the values’ canonical JSON, not of the escaped line', () => {
    const { record, line } = buildRecord({ seq: 0, hash: ZERO_HASH }, TS, 'refused', {
      path: HOSTILE,
    });
    const body: Record<string, unknown> = { ...record };
    delete body.hash;
    expect(record.hash).toBe(sha256Hex(canonicalJson(body)));
    expect(canonicalJson(body)).toContain('\u202e');
    expect(line).not.toContain('\u202e');
  });

  it('an escape spelled another way (upper-case hex) is an edit', async () => {
    const dir = tempDir();
    const log = await AuditLog.open(dir, { now: tickingClock() });
    await appendLine(log, 'refused', { path: 'Docs/é' });
    await log.close();
    const edited = readLog(dir).toString('latin1').replace('\\u00e9', '\\u00E9');
    expect(edited).toContain('\\u00E9');
    writeLogBytes(dir, edited);
    expect(verifyAudit(dir)).toMatchObject({ ok: false, seq: 1 });
  });
});

/** Any UTF-16 unit, lone surrogates included, and whole code points. */
const anyText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((u) => String.fromCharCode(u)) }),
  fc.string({
    unit: fc.constantFrom('\u202e', '\u2028', '\u2029', '\u0085', '\u009b', '\u007f', '\n', 'a'),
  }),
);
const fieldName = anyText.filter((k) => !RESERVED_FIELDS.includes(k));
const fields = fc.dictionary(
  fieldName,
  fc.oneof(anyText, fc.array(anyText, { maxLength: 3 }), fc.dictionary(anyText, anyText)),
  { maxKeys: 4 },
);
const event = anyText.filter((e) => e.length > 0 && e !== 'recovery');

describe('property: arbitrary strings in records', () => {
  it('every line is printable ASCII, parses back to the same values, and the chain verifies', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(event, fields), { minLength: 1, maxLength: 4 }), (recs) => {
        let head = { seq: 0, hash: ZERO_HASH };
        let log = '';
        for (const [ev, f] of recs) {
          const { record, line } = buildRecord(head, TS, ev, f);
          expect(line).toMatch(PRINTABLE_ASCII_LINE);
          expect(JSON.parse(line)).toEqual(JSON.parse(JSON.stringify(record)));
          head = { seq: record.seq, hash: record.hash };
          log += `${line}\n`;
        }
        const verdict = verifyAuditBytes(
          Buffer.from(log, 'latin1'),
          Buffer.from(serializeCheckpoint(head)),
        );
        expect(verdict).toMatchObject({ ok: true, records: recs.length, head });
      }),
      { numRuns: 300 },
    );
  });

  it('the same through the files AuditLog writes', async () => {
    await fc.assert(
      fc.asyncProperty(event, fields, async (ev, f) => {
        const dir = tempDir();
        const log = await AuditLog.open(dir, { now: tickingClock() });
        const written = await appendLine(log, ev as AuditEventName, f);
        await log.close();
        const lines = logLines(dir);
        expect(lines).toHaveLength(1);
        expect(lines[0]).toMatch(PRINTABLE_ASCII_LINE);
        expect(JSON.parse(lines[0] ?? '')).toEqual(JSON.parse(JSON.stringify(written)));
        expect(verifyAudit(dir)).toMatchObject({ ok: true, records: 1 });
      }),
      { numRuns: 25 },
    );
  });
});

describe('a log written before ASCII lines (raw UTF-8)', () => {
  const checkpoint = (): unknown =>
    JSON.parse(readFileSync(join(RAW_FIXTURE, 'audit.checkpoint'), 'utf8'));

  it('still verifies, with the same head as its checkpoint', () => {
    const raw = readFileSync(join(RAW_FIXTURE, 'audit.log'));
    // The fixture really holds the raw characters (this is what it stands for).
    expect(raw.toString('utf8')).toContain('\u202e');
    expect(raw.toString('utf8')).toContain('\u2028');
    expect(verifyAudit(RAW_FIXTURE)).toMatchObject({ ok: true, records: 6, head: checkpoint() });
  });

  it('the broker opens it and goes on in ASCII; the mixed log verifies', async () => {
    const dir = tempDir();
    cpSync(RAW_FIXTURE, dir, { recursive: true });
    const log = await AuditLog.open(dir, { now: tickingClock(Date.UTC(2026, 1, 1)) });
    expect(log.head).toEqual(checkpoint());
    await appendLine(log, 'refused', { path: HOSTILE });
    await log.close();
    const lines = logLines(dir);
    expect(lines).toHaveLength(7);
    expect(lines[1]).toContain('\u202e');
    expect(lines[6]).toMatch(PRINTABLE_ASCII_LINE);
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: 7 });
    expect(readLog(dir).subarray(0, readFileSync(join(RAW_FIXTURE, 'audit.log')).length)).toEqual(
      readFileSync(join(RAW_FIXTURE, 'audit.log')),
    );
  });

  it('the review battery’s audit check reads both forms', async () => {
    const dir = tempDir();
    cpSync(RAW_FIXTURE, dir, { recursive: true });
    const log = await AuditLog.open(dir, { now: tickingClock(Date.UTC(2026, 1, 1)) });
    await appendLine(log, 'intent', { tool: 'list', path: HOSTILE, correlation_id: 'c1' });
    await appendLine(log, 'outcome', { tool: 'list', correlation_id: 'c1' });
    await log.close();
    const parsed = logLines(dir).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(auditVerdict(dir, parsed)).toBe('verifies, 1 intents each with one outcome');
  });
});
