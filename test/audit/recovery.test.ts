/**
 * Crash artefacts: a torn tail is kept byte for byte and covered by a recovery record;
 * verify accepts exactly that pattern and nothing looser.
 */
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  AuditLog,
  canonicalJson,
  sha256Hex,
  verifyAudit,
  verifyAuditBytes,
} from '../../broker/audit/index.js';
import {
  checkpointPath,
  logLines,
  logPath,
  readLog,
  tempDir,
  tickingClock,
  writeLog,
} from './helpers.js';
import { appendLine } from '../../support/audit-line.js';

async function reopen(dir: string): Promise<AuditLog> {
  return AuditLog.open(dir, { now: tickingClock() });
}

describe('torn final line', () => {
  it('keeps the torn bytes, appends a newline and a recovery record naming them', async () => {
    const dir = tempDir();
    const recs = await writeLog(dir, 3);
    const fragment = '{"event":"intent","inst';
    appendFileSync(logPath(dir), fragment);
    const before = readLog(dir);
    expect(verifyAudit(dir)).toMatchObject({ ok: false, seq: 4 });

    const log = await reopen(dir);
    const next = await appendLine(log, 'start', {});
    await log.close();

    const after = readLog(dir);
    // Security: existing bytes are never rewritten.
    expect(after.subarray(0, before.length).equals(before)).toBe(true);
    const lines = logLines(dir);
    expect(lines[3]).toBe(fragment);
    const recovery = JSON.parse(lines[4] as string) as Record<string, unknown>;
    expect(recovery).toMatchObject({
      event: 'recovery',
      seq: 4,
      prev: recs[2]?.hash,
      torn: { bytes: fragment.length, sha256: sha256Hex(fragment) },
    });
    expect(next.seq).toBe(5);
    expect(log.warnings.join('\n')).toMatch(
      new RegExp(`torn tail of ${fragment.length} byte\\(s\\) after seq 3.*${sha256Hex(fragment)}`),
    );
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: 5, head: { seq: 5 } });
  });

  it('a fresh log whose first write was torn recovers as seq 1', async () => {
    const dir = tempDir();
    await (await reopen(dir)).close(); // writes the seq-0 checkpoint, as every first start does
    writeFileSync(logPath(dir), '{"event":"st');
    const log = await reopen(dir);
    await log.close();
    expect(JSON.parse(logLines(dir)[1] as string)).toMatchObject({ seq: 1, event: 'recovery' });
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: 1 });
  });

  it('NUL bytes left by a crash (delayed allocation) count as the torn region', async () => {
    const dir = tempDir();
    await writeLog(dir, 2);
    appendFileSync(logPath(dir), Buffer.alloc(300));
    const log = await reopen(dir);
    await log.close();
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: 3 });
  });

  it('a tail larger than any record (2 MiB of NULs) is recovered without parsing it', async () => {
    const dir = tempDir();
    await writeLog(dir, 1);
    appendFileSync(logPath(dir), Buffer.alloc(2 * 1024 * 1024));
    const log = await reopen(dir);
    await log.close();
    expect(JSON.parse(logLines(dir).at(-1) as string)).toMatchObject({
      seq: 2,
      torn: { bytes: 2 * 1024 * 1024, sha256: sha256Hex(Buffer.alloc(2 * 1024 * 1024)) },
    });
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: 2 });
  });

  it('a complete last record beyond the checkpoint that only lost its newline gets the newline', async () => {
    const dir = tempDir();
    const recs = await writeLog(dir, 3);
    const bytes = readLog(dir);
    writeFileSync(logPath(dir), bytes.subarray(0, bytes.length - 1));
    // The crash shape: the checkpoint had not moved to seq 3 yet.
    writeFileSync(checkpointPath(dir), `{"hash":"${recs[1]?.hash}","seq":2}\n`);
    const log = await reopen(dir);
    await log.close();
    expect(readLog(dir).equals(bytes)).toBe(true);
    expect(log.warnings.join('\n')).toMatch(/seq 3\) had no trailing newline/);
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: 3, checkpoint: { seq: 3 } });
  });

  it('a checkpointed last record without its newline is not a crash shape and refuses', async () => {
    const dir = tempDir();
    await writeLog(dir, 3);
    const bytes = readLog(dir);
    writeFileSync(logPath(dir), bytes.subarray(0, bytes.length - 1));
    await expect(reopen(dir)).rejects.toMatchObject({ code: 'corrupt', seq: 3 });
  });

  it('a crash during the recovery write itself (fragment + newline + torn recovery) recovers again', async () => {
    const dir = tempDir();
    await writeLog(dir, 2);
    appendFileSync(logPath(dir), '{"event":"int\n{"event":"recov');
    const log = await reopen(dir);
    await log.close();
    expect(JSON.parse(logLines(dir).at(-1) as string)).toMatchObject({
      seq: 3,
      event: 'recovery',
      torn: { bytes: '{"event":"int\n{"event":"recov'.length },
    });
    expect(verifyAudit(dir)).toMatchObject({ ok: true, records: 3 });
  });

  it('a torn tail after the checkpointed head still refuses when records before it are missing', async () => {
    const dir = tempDir();
    const recs = await writeLog(dir, 4);
    const lines = readLog(dir).toString('utf8').split('\n');
    writeFileSync(logPath(dir), `${lines.slice(0, 2).join('\n')}\n{"torn`);
    expect(JSON.parse(readFileSync(checkpointPath(dir), 'utf8'))).toMatchObject({
      seq: 4,
      hash: recs[3]?.hash,
    });
    await expect(reopen(dir)).rejects.toMatchObject({ code: 'corrupt', seq: 3 });
  });

  it('a recovered log stays tamper-evident: every byte flip is detected', async () => {
    const dir = tempDir();
    await writeLog(dir, 2);
    appendFileSync(logPath(dir), '{"event":"x","pa');
    const log = await reopen(dir);
    await appendLine(log, 'start', {});
    await log.close();
    const original = readLog(dir);
    const cp = readFileSync(checkpointPath(dir));
    expect(verifyAuditBytes(original, cp).ok).toBe(true);
    const undetected: number[] = [];
    for (const mask of [0x01, 0x20, 0x07]) {
      for (let i = 0; i < original.length; i += 1) {
        const bytes = Buffer.from(original);
        bytes[i] = (bytes[i] as number) ^ mask;
        if (verifyAuditBytes(bytes, cp).ok) undetected.push(i);
      }
    }
    expect(undetected).toEqual([]);
  });
});

describe('attack: abusing the recovery pattern', () => {
  async function recoveredLog(): Promise<{ dir: string; lines: string[] }> {
    const dir = tempDir();
    await writeLog(dir, 2);
    appendFileSync(logPath(dir), 'GARBAGE');
    const log = await reopen(dir);
    await appendLine(log, 'start', {});
    await log.close();
    return { dir, lines: readLog(dir).toString('utf8').split('\n') };
  }

  it('changing the torn fragment breaks the match with its recovery record', async () => {
    const { dir, lines } = await recoveredLog();
    lines[2] = 'GARBAGF';
    writeFileSync(logPath(dir), lines.join('\n'));
    expect(verifyAudit(dir)).toMatchObject({ ok: false, seq: 3 });
  });

  it('a recovery record that names the fragment but breaks the chain is not accepted', async () => {
    const { dir, lines } = await recoveredLog();
    const rec = JSON.parse(lines[3] as string) as Record<string, unknown>;
    const { hash: _h, ...body } = rec;
    body.prev = '1'.repeat(64);
    lines[3] = canonicalJson({ ...body, hash: sha256Hex(canonicalJson(body)) });
    writeFileSync(logPath(dir), lines.join('\n'));
    expect(verifyAudit(dir)).toMatchObject({ ok: false, seq: 3 });
  });

  it('garbage that no recovery record names is corruption, also mid-log', async () => {
    const { dir, lines } = await recoveredLog();
    lines.splice(1, 0, 'GARBAGE');
    writeFileSync(logPath(dir), lines.join('\n'));
    expect(verifyAudit(dir)).toMatchObject({ ok: false, seq: 2 });
  });

  it('removing the torn fragment is caught: a recovery record must stand right behind it', async () => {
    const { dir, lines } = await recoveredLog();
    lines.splice(2, 1);
    writeFileSync(logPath(dir), lines.join('\n'));
    expect(verifyAudit(dir)).toMatchObject({ ok: false, seq: 3 });
  });

  it('a caller cannot append a recovery record that excuses bytes', async () => {
    const dir = tempDir();
    const log = await reopen(dir);
    await expect(
      appendLine(log, 'recovery', { torn: { bytes: 1, sha256: sha256Hex('x') } }),
    ).rejects.toMatchObject({ code: 'invalid_fields' });
    expect((await appendLine(log, 'recovery', { note: 'pipeline-level recovery' })).seq).toBe(1);
    await log.close();
  });

  it('a damaged record that is already covered by the checkpoint is never "recovered" on open', async () => {
    const dir = tempDir();
    await writeLog(dir, 3);
    const bytes = readLog(dir);
    bytes[bytes.length - 10] = (bytes[bytes.length - 10] as number) ^ 0x01;
    writeFileSync(logPath(dir), bytes);
    await expect(reopen(dir)).rejects.toMatchObject({ code: 'corrupt', seq: 3 });
    expect(readLog(dir).equals(bytes)).toBe(true);
  });
});
