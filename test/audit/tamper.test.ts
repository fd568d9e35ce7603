/**
 * Attacks on the stored log and checkpoint: every one must make verifyAudit fail, name
 * the first bad seq, and make AuditLog.open refuse.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { AuditLog, verifyAudit, verifyAuditBytes } from '../../broker/audit/index.js';
import {
  checkpointPath,
  readLog,
  tempDir,
  tickingClock,
  writeLog,
  writeLogBytes,
} from './helpers.js';

async function expectOpenRefused(dir: string, seq?: number): Promise<void> {
  const err = await AuditLog.open(dir, { now: tickingClock() }).then(
    async (log) => {
      await log.close();
      return undefined;
    },
    (e: unknown) => e,
  );
  expect(err).toMatchObject({ code: 'corrupt' });
  if (seq !== undefined) expect(err).toMatchObject({ seq });
}

function withLines(dir: string, edit: (lines: string[]) => string[]): void {
  const lines = readLog(dir).toString('utf8').split('\n');
  expect(lines.pop()).toBe('');
  writeLogBytes(dir, `${edit(lines).join('\n')}\n`);
}

describe('attack: flipping any single byte of the log', () => {
  let dir: string;
  let original: Buffer;
  let checkpoint: Buffer;
  // The exhaustive loops check bytes in memory (verifyAuditBytes: the code verifyAudit
  // runs after reading the two files); a sample goes through the files as well.
  const verifies = (bytes: Buffer): boolean => verifyAuditBytes(bytes, checkpoint).ok;
  beforeAll(async () => {
    dir = tempDir();
    await writeLog(dir, 4);
    original = readLog(dir);
    checkpoint = readFileSync(checkpointPath(dir));
    expect(verifyAudit(dir).ok).toBe(true);
    expect(verifies(original)).toBe(true);
  });

  // XOR masks: low bit, case/space bit (0x20: 'a'->'A', ','->'\f', '{'->'['), and
  // 0x07 ('\n'->'\r', ' '->'\'') so that whitespace-looking changes are covered too.
  it.each(['01', '20', '07', '80', 'ff'])('every position XOR 0x%s is detected', (hex) => {
    const mask = Number.parseInt(hex, 16);
    const undetected: number[] = [];
    for (let i = 0; i < original.length; i += 1) {
      const bytes = Buffer.from(original);
      bytes[i] = (bytes[i] as number) ^ mask;
      if (verifies(bytes)) undetected.push(i);
    }
    expect(undetected).toEqual([]);
  });

  it('every 37th flipped position is also detected through the files on disk', () => {
    const undetected: number[] = [];
    for (let i = 0; i < original.length; i += 37) {
      const bytes = Buffer.from(original);
      bytes[i] = (bytes[i] as number) ^ 0x01;
      writeLogBytes(dir, bytes);
      if (verifyAudit(dir).ok) undetected.push(i);
    }
    writeLogBytes(dir, original);
    expect(undetected).toEqual([]);
  });

  it('replacing any byte by a space, a tab or a newline is detected', () => {
    const undetected: string[] = [];
    for (const ch of [0x20, 0x09, 0x0a, 0x0d]) {
      for (let i = 0; i < original.length; i += 1) {
        if (original[i] === ch) continue;
        const bytes = Buffer.from(original);
        bytes[i] = ch;
        if (verifies(bytes)) undetected.push(`${i}:${ch}`);
      }
    }
    expect(undetected).toEqual([]);
  });

  it('inserting a space anywhere (reformatting) is detected', () => {
    const undetected: number[] = [];
    for (let i = 0; i <= original.length; i += 1) {
      const bytes = Buffer.concat([
        original.subarray(0, i),
        Buffer.from(' '),
        original.subarray(i),
      ]);
      if (verifies(bytes)) undetected.push(i);
    }
    expect(undetected).toEqual([]);
  });

  it('names the seq of the flipped record', () => {
    const lines = original.toString('utf8').split('\n');
    const third = (lines[0] as string).length + (lines[1] as string).length + 2 + 10;
    const bytes = Buffer.from(original);
    bytes[third] = (bytes[third] as number) ^ 0x01;
    writeLogBytes(dir, bytes);
    const result = verifyAudit(dir);
    writeLogBytes(dir, original);
    expect(result).toMatchObject({ ok: false, seq: 3 });
  });

  it('property: any non-empty set of byte changes is detected', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(
          fc.record({
            at: fc.nat({ max: original.length - 1 }),
            xor: fc.integer({ min: 1, max: 255 }),
          }),
          { minLength: 1, maxLength: 4, selector: (c) => c.at },
        ),
        (changes) => {
          const bytes = Buffer.from(original);
          for (const c of changes) bytes[c.at] = (bytes[c.at] as number) ^ c.xor;
          expect(verifies(bytes)).toBe(false);
        },
      ),
      { numRuns: 1000 },
    );
  });
});

describe('attack: editing whole records', () => {
  it('deleting a line is caught at the missing seq', async () => {
    const dir = tempDir();
    await writeLog(dir, 5);
    withLines(dir, (l) => l.filter((_, i) => i !== 2));
    expect(verifyAudit(dir)).toMatchObject({ ok: false, seq: 3 });
    await expectOpenRefused(dir, 3);
  });

  it('deleting the first line is caught at seq 1', async () => {
    const dir = tempDir();
    await writeLog(dir, 3);
    withLines(dir, (l) => l.slice(1));
    expect(verifyAudit(dir)).toMatchObject({ ok: false, seq: 1 });
  });

  it('reordering two lines is caught at the first moved seq', async () => {
    const dir = tempDir();
    await writeLog(dir, 5);
    withLines(dir, (l) => [l[0], l[2], l[1], l[3], l[4]] as string[]);
    expect(verifyAudit(dir)).toMatchObject({ ok: false, seq: 2 });
    await expectOpenRefused(dir, 2);
  });

  it('duplicating a line is caught', async () => {
    const dir = tempDir();
    await writeLog(dir, 3);
    withLines(dir, (l) => [l[0], l[1], l[1], l[2]] as string[]);
    expect(verifyAudit(dir)).toMatchObject({ ok: false, seq: 3 });
  });

  it('rewriting a field and recomputing that record hash is caught at the next record', async () => {
    const dir = tempDir();
    await writeLog(dir, 4);
    const { canonicalJson, sha256Hex } = await import('../../broker/audit/index.js');
    withLines(dir, (lines) =>
      lines.map((line, i) => {
        if (i !== 1) return line;
        const { hash: _h, ...body } = JSON.parse(line) as Record<string, unknown>;
        body.path = 'Secret/other.txt';
        return canonicalJson({ ...body, hash: sha256Hex(canonicalJson(body)) });
      }),
    );
    expect(verifyAudit(dir)).toMatchObject({ ok: false, seq: 3 });
  });

  it('an extra blank line is caught', async () => {
    const dir = tempDir();
    await writeLog(dir, 3);
    withLines(dir, (l) => [l[0], '', l[1], l[2]] as string[]);
    expect(verifyAudit(dir)).toMatchObject({ ok: false, seq: 2 });
  });
});

describe('attack: truncating the tail', () => {
  it('dropping the last records at a line boundary is caught through the checkpoint', async () => {
    const dir = tempDir();
    await writeLog(dir, 5);
    withLines(dir, (l) => l.slice(0, 3));
    const result = verifyAudit(dir);
    expect(result).toMatchObject({ ok: false, seq: 4 });
    expect(result.ok === false && result.reason).toMatch(/truncated tail/);
    await expectOpenRefused(dir, 4);
  });

  it('emptying the log is caught through the checkpoint', async () => {
    const dir = tempDir();
    await writeLog(dir, 2);
    writeLogBytes(dir, '');
    expect(verifyAudit(dir)).toMatchObject({ ok: false, seq: 1 });
    await expectOpenRefused(dir, 1);
  });

  it('deleting the log file is caught through the checkpoint', async () => {
    const dir = tempDir();
    await writeLog(dir, 2);
    rmSync(`${dir}/audit.log`);
    expect(verifyAudit(dir)).toMatchObject({ ok: false, seq: 1 });
    await expectOpenRefused(dir, 1);
  });

  it('cutting mid-line is caught (a torn tail verify does not excuse)', async () => {
    const dir = tempDir();
    await writeLog(dir, 3);
    const bytes = readLog(dir);
    writeLogBytes(dir, bytes.subarray(0, bytes.length - 20));
    expect(verifyAudit(dir)).toMatchObject({ ok: false, seq: 3 });
  });

  it('truncating and deleting the checkpoint is caught as a missing checkpoint', async () => {
    const dir = tempDir();
    await writeLog(dir, 5);
    withLines(dir, (l) => l.slice(0, 3));
    rmSync(checkpointPath(dir));
    const result = verifyAudit(dir);
    expect(result).toMatchObject({ ok: false, seq: 3 });
    expect(result.ok === false && result.reason).toMatch(/checkpoint is missing/);
    await expectOpenRefused(dir);
  });
});

describe('attack: tampering with the checkpoint', () => {
  it('a checkpoint naming another hash for its seq is caught at that seq', async () => {
    const dir = tempDir();
    const recs = await writeLog(dir, 4);
    writeFileSync(checkpointPath(dir), `{"hash":"${recs[1]?.hash}","seq":4}\n`);
    expect(verifyAudit(dir)).toMatchObject({ ok: false, seq: 4 });
    await expectOpenRefused(dir, 4);
  });

  it('a checkpoint beyond the log is caught as a truncated tail', async () => {
    const dir = tempDir();
    const recs = await writeLog(dir, 2);
    writeFileSync(checkpointPath(dir), `{"hash":"${recs[1]?.hash}","seq":9}\n`);
    expect(verifyAudit(dir)).toMatchObject({ ok: false, seq: 3 });
  });

  it('every single-byte flip of the checkpoint is caught', async () => {
    const dir = tempDir();
    await writeLog(dir, 3);
    const original = readFileSync(checkpointPath(dir));
    const undetected: string[] = [];
    for (const mask of [0x01, 0x20, 0x07]) {
      for (let i = 0; i < original.length; i += 1) {
        const bytes = Buffer.from(original);
        bytes[i] = (bytes[i] as number) ^ mask;
        if (verifyAuditBytes(readLog(dir), bytes).ok) undetected.push(`${i}^${mask}`);
      }
    }
    expect(undetected).toEqual([]);
    expect(verifyAudit(dir).ok).toBe(true);
  });

  it('a non-empty log without any checkpoint refuses open even with no whole record', async () => {
    const dir = tempDir();
    writeLogBytes(dir, '{"event":"st');
    expect(verifyAudit(dir)).toMatchObject({ ok: false });
    await expectOpenRefused(dir, 1);
  });

  it('an unreadable checkpoint refuses open', async () => {
    const dir = tempDir();
    await writeLog(dir, 2);
    writeFileSync(checkpointPath(dir), 'not json');
    expect(verifyAudit(dir)).toMatchObject({ ok: false, seq: 2 });
    await expectOpenRefused(dir);
  });
});

describe('a log ahead of its checkpoint (stop between log fsync and checkpoint update)', () => {
  it('verifies, and open brings the checkpoint up to the head with a warning', async () => {
    const dir = tempDir();
    const recs = await writeLog(dir, 4);
    writeFileSync(checkpointPath(dir), `{"hash":"${recs[1]?.hash}","seq":2}\n`);
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: 4, checkpoint: { seq: 2 } });
    const log = await AuditLog.open(dir, { now: tickingClock() });
    await log.close();
    expect(log.warnings.join('\n')).toMatch(/2 record\(s\) ahead/);
    expect(readFileSync(checkpointPath(dir), 'utf8')).toBe(`{"hash":"${recs[3]?.hash}","seq":4}\n`);
  });
});
